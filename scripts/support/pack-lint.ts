// publint (package.json fields against the packed files) and are-the-types-wrong (how TypeScript
// resolves each entry point's types) on one packed tarball. Both read the tarball offline.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './workspace-packages.js'
import { describeResult, runCommand } from './run-command.js'

const LINT_MS = 120_000

/** The file of an installed devDependency's bin, run with this node (no shell, no PATH lookup). */
function binFile(pkg: string, name: string): string {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { bin: Record<string, string> }
  return join(ROOT, 'node_modules', pkg, manifest.bin[name])
}

/** Build files that must not ship: TypeScript's incremental state (tsconfig puts it in lib/). */
const NOT_SHIPPED = /(^|\/)[^/]*\.tsbuildinfo$/

export async function lintTarball(tarball: string, files: readonly string[]): Promise<string[]> {
  const problems = files.filter((file) => NOT_SHIPPED.test(file)).map((file) => `${file} is in the tarball: exclude it in package.json "files"`)
  // --strict: a warning (a field that points at a file not in the package, a condition in the wrong order) fails too.
  const publint = await runCommand(process.execPath, [binFile('publint', 'publint'), 'run', tarball, '--strict'], {
    cwd: ROOT, timeoutMs: LINT_MS,
  })
  if (publint.code !== 0) problems.push(describeResult('publint', publint))
  // --profile esm-only: our packages are ESM only ("type": "module", Node >= 20.19, DESIGN.md §2), so
  // the CommonJS `require` and pre-exports (node10) resolutions attw checks by default do not apply.
  // --no-definitely-typed: every package ships its own types; attw would otherwise ask the registry for @types.
  const attw = await runCommand(process.execPath, [
    binFile('@arethetypeswrong/cli', 'attw'), tarball,
    '--profile', 'esm-only', '--no-definitely-typed', '--format', 'ascii', '--no-color', '--no-emoji',
  ], { cwd: ROOT, timeoutMs: LINT_MS })
  if (attw.code !== 0) problems.push(describeResult('attw', attw))
  return problems
}
