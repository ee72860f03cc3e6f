// One package installed alone: an empty project gets the package's tarball and those of the packages
// of ours it needs (third-party packages come from the registry or the npm cache), then imports every
// entry point and runs every bin as a user would, with npx, from the project and from another folder.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Packed, tarballsFor } from './pack-tarballs.js'
import { BIN_INVOCATIONS } from './pack-bins.js'
import { entryPoints } from './package-surface.js'
import { checkTypes, typesInstall } from './pack-types.js'
import { type CommandResult, describeResult, runCommand } from './run-command.js'

const INSTALL_MS = 300_000
const IMPORT_MS = 120_000
const BIN_MS = 60_000

/**
 * Run in the project: imports each module entry point, resolves each program entry (a program runs
 * when imported, so it is only resolved: its bin runs it), and prints the failures as JSON.
 */
const IMPORT_SCRIPT = `
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
const [modules, programs] = JSON.parse(process.argv[1])
const failures = []
for (const specifier of modules) {
  try { await import(specifier) } catch (error) { failures.push(specifier + ': ' + (error?.message ?? error)) }
}
for (const specifier of programs) {
  try {
    const file = fileURLToPath(import.meta.resolve(specifier))
    if (!existsSync(file)) failures.push(specifier + ': ' + file + ' is not in the package')
  } catch (error) { failures.push(specifier + ': ' + (error?.message ?? error)) }
}
process.stdout.write(JSON.stringify(failures))
process.exit(0)
`

/** Every `exports` key but ./package.json, split into modules and programs (what a bin runs). */
function entrySpecifiers(entry: Packed): { modules: string[]; programs: string[] } {
  const points = entryPoints([entry.manifest])
  return {
    modules: points.filter((point) => !point.program).map((point) => point.specifier),
    programs: points.filter((point) => point.program).map((point) => point.specifier),
  }
}

/** The optional peers: a user of the entry that needs one (the contract suite needs mocha) installs it. */
function optionalPeers(entry: Packed): string[] {
  const meta = (entry.manifest as { peerDependenciesMeta?: Record<string, { optional?: boolean }> }).peerDependenciesMeta ?? {}
  return Object.keys(meta).filter((name) => meta[name].optional).map((name) => `${name}@${entry.manifest.peerDependencies?.[name] ?? '*'}`)
}

async function runBins(entry: Packed, project: string, session: string): Promise<string[]> {
  const problems: string[] = []
  const bins = typeof entry.manifest.bin === 'string' ? { [entry.manifest.name]: entry.manifest.bin } : entry.manifest.bin ?? {}
  for (const name of Object.keys(bins)) {
    const invocation = BIN_INVOCATIONS[name]
    if (!invocation) {
      problems.push(`bin ${name}: no invocation known: add one to scripts/support/pack-bins.ts`)
      continue
    }
    for (const [file, content] of Object.entries(invocation.files ?? {})) writeFileSync(join(project, file), content)
    const args = invocation.args.map((arg) => arg.replaceAll('{project}', project))
    // As the READMEs write it: npx from the project, and from a session folder outside it with --prefix.
    // --no: a bin npx does not find locally is a failure here, never a download from the registry.
    const runs: [string, string, string[]][] = [
      [`npx ${name}`, project, ['--no', '--', name, ...args]],
      [`npx --prefix <project> ${name} (from another folder)`, session, ['--no', '--prefix', project, '--', name, ...args]],
    ]
    for (const [label, cwd, npxArgs] of runs) {
      const input = invocation.input
      const result: CommandResult = await runCommand('npx', npxArgs, { cwd, input, endInputWhen: input ? invocation.expect : undefined, timeoutMs: BIN_MS })
      if (result.code !== invocation.code || !invocation.expect.test(result.stdout + result.stderr)) {
        problems.push(`${describeResult(label, result)}\n    expected exit ${invocation.code} and ${invocation.expect}`)
      }
    }
  }
  return problems
}

/**
 * Installs the package alone into the empty folder `project` and lists every problem found (none: it
 * works). `session` is another folder, outside the project, where a bin is also run from.
 */
export async function checkInstalled(entry: Packed, packed: readonly Packed[], project: string, session: string): Promise<string[]> {
  const shortName = entry.manifest.dir.split('/').pop()!
  mkdirSync(project, { recursive: true })
  mkdirSync(session, { recursive: true })
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: `pack-check-${shortName}`, private: true, type: 'module' }, null, 2)}\n`)
  const install = await runCommand('npm', [
    'install', '--prefer-offline', '--no-audit', '--no-fund', ...tarballsFor(packed, entry.manifest.name), ...optionalPeers(entry), ...typesInstall(),
  ], { cwd: project, timeoutMs: INSTALL_MS })
  if (install.code !== 0) return [describeResult('npm install', install)]

  const { modules, programs } = entrySpecifiers(entry)
  const imported = await runCommand(process.execPath, ['--input-type=module', '-e', IMPORT_SCRIPT, JSON.stringify([modules, programs])], {
    cwd: project, timeoutMs: IMPORT_MS,
  })
  const problems: string[] = []
  if (imported.code !== 0) problems.push(describeResult('importing the entry points', imported))
  else problems.push(...(JSON.parse(imported.stdout) as string[]).map((failure) => `import ${failure}`))
  problems.push(...await checkTypes(project, [...modules, ...programs]))
  problems.push(...await runBins(entry, project, session))
  return problems
}
