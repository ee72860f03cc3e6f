// `npm run lint:imports` (part of `npm run lint`): every package a package's `src/` imports, type-only
// imports included, is in its `dependencies` or `peerDependencies`. knip counts devDependencies (tests
// import from there), and a package that gets an undeclared one through another dependency still
// installs from its tarball; this check catches both. It also fails on an import circle among the
// files of a package (type-only imports count). Exits 1 naming each problem.
import { readdirSync, readFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join } from 'node:path'
import { importCircles } from './support/import-circles.js'
import { type Manifest, ROOT, workspaceManifests } from './support/workspace-packages.js'

// Static and type imports, re-exports and dynamic imports of a string literal (our own code only).
const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)'([^'./][^']*)'/g
const BUILTINS = new Set(builtinModules)

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.(ts|mts|js|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
}

function packageOf(specifier: string): string {
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

function undeclared(manifest: Manifest): string[] {
  const declared = new Set([manifest.name, ...Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies })])
  const found: string[] = []
  for (const file of sourceFiles(join(ROOT, manifest.dir, 'src'))) {
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      if (specifier.startsWith('node:') || BUILTINS.has(specifier)) continue
      const name = packageOf(specifier)
      if (!declared.has(name)) found.push(`${manifest.name} imports ${name} (${file.slice(ROOT.length + 1)}) without declaring it`)
    }
  }
  return found
}

const problems = workspaceManifests().flatMap(undeclared)
if (problems.length) {
  console.error(`declared-imports: add these to dependencies (or peerDependencies):\n  ${[...new Set(problems)].join('\n  ')}`)
  process.exitCode = 1
}

/** No package's files form an import circle (DESIGN §3). */
const circles = readdirSync(join(ROOT, 'packages')).map((name) => `packages/${name}`).flatMap((dir) => importCircles(join(ROOT, dir, 'src')))
if (circles.length) {
  const named = circles.map((circle) => [...circle, circle[0]].map((file) => file.slice(ROOT.length + 1)).join(' -> '))
  console.error(`declared-imports: import circles (break each by moving what both sides need below them):\n  ${named.join('\n  ')}`)
  process.exitCode = 1
}
