// The tarballs of the package check: `tsc -b`, then `npm pack` of every published (non-private)
// `packages/*` package, as a user would get it from the registry.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Manifest, ROOT, SCOPE, internalDependencies, workspaceManifests } from './workspace-packages.js'
import { describeResult, runCommand } from './run-command.js'

export interface Packed {
  manifest: Manifest
  /** Absolute path of the .tgz. */
  tarball: string
  /** The paths inside the tarball (`package/` stripped). */
  files: string[]
}

const BUILD_MS = 300_000
const PACK_MS = 120_000

export async function buildAndPack(destination: string): Promise<Packed[]> {
  const build = await runCommand(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b'], { cwd: ROOT, timeoutMs: BUILD_MS })
  if (build.code !== 0) throw new Error(describeResult('tsc -b', build))
  const manifests = workspaceManifests(['packages']).filter((manifest) => !manifest.private)
  mkdirSync(destination, { recursive: true })
  const args = ['pack', '--json', '--pack-destination', destination, ...manifests.flatMap((manifest) => ['--workspace', manifest.dir])]
  const pack = await runCommand('npm', args, { cwd: ROOT, timeoutMs: PACK_MS, maxOutput: 64 * 1024 * 1024 })
  if (pack.code !== 0) throw new Error(describeResult('npm pack', pack))
  const reports = JSON.parse(pack.stdout) as { name: string; filename: string; files: { path: string }[] }[]
  return manifests.map((manifest) => {
    const report = reports.find((entry) => entry.name === manifest.name)
    if (!report) throw new Error(`npm pack did not pack ${manifest.name}`)
    return { manifest, tarball: join(destination, report.filename), files: report.files.map((file) => file.path) }
  })
}

/** The tarballs one package installs from: its own and those of every package of ours it needs, transitively. */
export function tarballsFor(packed: readonly Packed[], name: string): string[] {
  const byShortName = new Map(packed.map((entry) => [entry.manifest.name.slice(SCOPE.length), entry]))
  const needed = new Set<string>()
  const visit = (shortName: string) => {
    if (needed.has(shortName)) return
    const entry = byShortName.get(shortName)
    if (!entry) throw new Error(`${SCOPE}${shortName} is needed but not packed (is it private?)`)
    needed.add(shortName)
    internalDependencies(entry.manifest).forEach(visit)
  }
  visit(name.slice(SCOPE.length))
  return [...needed].map((shortName) => byShortName.get(shortName)!.tarball)
}
