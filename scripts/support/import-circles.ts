// Import circles among the files of one folder (relative imports, type-only ones included): each
// circle once, as the files in the order they import each other. Used by declared-imports.ts.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'

const RELATIVE = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)'(\.{1,2}\/[^']+)'/g

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
}

function importsOf(file: string): string[] {
  const found: string[] = []
  for (const [, specifier] of readFileSync(file, 'utf8').matchAll(RELATIVE)) {
    const target = resolve(dirname(file), specifier.replace(/\.js$/, '.ts'))
    if (existsSync(target)) found.push(target)
  }
  return found
}

/** Every circle of imports among the source files under `dir` (depth-first; each reported once). */
export function importCircles(dir: string): string[][] {
  const files = sourceFiles(resolve(dir))
  const edges = new Map(files.map((file) => [file, importsOf(file)]))
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const circles: string[][] = []
  const seen = new Set<string>()
  const visit = (file: string): void => {
    state.set(file, 'open')
    stack.push(file)
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) !== 'open') {
        if (!state.has(next)) visit(next)
        continue
      }
      const circle = stack.slice(stack.indexOf(next))
      const key = [...circle].sort().join('\n')
      if (!seen.has(key)) circles.push(circle)
      seen.add(key)
    }
    stack.pop()
    state.set(file, 'done')
  }
  for (const file of files) if (!state.has(file)) visit(file)
  return circles
}
