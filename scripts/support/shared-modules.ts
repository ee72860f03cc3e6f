// The shared package's module table, built from its face (packages/shared/src/index.ts): one row per
// module the face re-exports, in the face's order, with the names it exports there and the first
// sentence of the module's first comment. `npm run docs:map` writes it into packages/shared/README.md
// between the shared-modules markers; `npm run docs:check` fails when the README differs.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { ROOT } from './workspace-packages.js'

export const SHARED_DIR = join(ROOT, 'packages', 'shared')
export const SHARED_START = '<!-- shared-modules:start (written by npm run docs:map from src/index.ts) -->'
export const SHARED_END = '<!-- shared-modules:end -->'
/** A caption is one sentence of a table cell: a longer one belongs in the module's comment, not its first sentence. */
const MAX_CAPTION = 280

export interface SharedModule {
  /** The module's path under src/, without `.ts`: `vocabulary/numbers`. */
  path: string
  names: string[]
  caption: string
}

/** The modules the face re-exports (`export { … } from './x.js'`), merged per module, in order of first mention. */
export function faceModules(index: string): { path: string, names: string[] }[] {
  const modules = new Map<string, string[]>()
  for (const match of index.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'\.\/([^']+)\.js'/g)) {
    const names = match[1]!.split(',').map((name) => name.trim().replace(/^type\s+/, '').replace(/^.*\s+as\s+/, '')).filter(Boolean)
    modules.set(match[2]!, [...modules.get(match[2]!) ?? [], ...names])
  }
  return [...modules].map(([path, names]) => ({ path, names }))
}

/** The first sentence of a module's first comment (a `//` run or a block comment), on one line; undefined without one. */
export function caption(source: string): string | undefined {
  const comment = /\/\*\*?([\s\S]*?)\*\/|((?:^[ \t]*\/\/.*\n?)+)/m.exec(source)
  if (!comment) return undefined
  const text = (comment[1] ?? comment[2]!)
    .split('\n')
    .map((line) => line.replace(/^\s*(?:\/\/|\*)?\s?/, '').trim())
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim()
  const end = text.search(/\.(?:\s|$)/)
  return (end < 0 ? text : text.slice(0, end + 1)).replaceAll('|', '\\|') || undefined
}

/** Folders in table order; a module at the root of src/ comes last. */
const FOLDERS = ['vocabulary', 'security', 'async', 'crossing']
const folderRank = (path: string) => {
  const rank = FOLDERS.indexOf(dirname(path))
  return rank < 0 ? FOLDERS.length : rank
}

/** Every module of the face with its caption, read from disk: by folder, then in the face's order. */
export function sharedModules(dir = SHARED_DIR): SharedModule[] {
  const index = readFileSync(join(dir, 'src', 'index.ts'), 'utf8')
  return faceModules(index)
    .map(({ path, names }) => ({ path, names, caption: caption(readFileSync(join(dir, 'src', `${path}.ts`), 'utf8')) ?? '' }))
    .sort((a, b) => folderRank(a.path) - folderRank(b.path))
}

/** What is wrong with the modules' captions, one line each. */
export function captionProblems(modules: readonly SharedModule[]): string[] {
  return modules.flatMap(({ path, caption: text }) => {
    if (!text) return [`packages/shared/src/${path}.ts: no leading comment to caption it`]
    if (text.length > MAX_CAPTION) return [`packages/shared/src/${path}.ts: its comment's first sentence is ${text.length} characters (at most ${MAX_CAPTION})`]
    return []
  })
}

export function sharedModuleTable(modules: readonly SharedModule[]): string {
  const rows = modules.map(({ path, names, caption: text }) => {
    return `| [\`${path}.ts\`](src/${path}.ts) | ${names.map((name) => `\`${name}\``).join(', ')} | ${text} |`
  })
  return ['| module | exports | what it is |', '|---|---|---|', ...rows].join('\n')
}

/** The README with the generated table between the markers (which must each appear once). */
export function withSharedModules(readme: string, table: string): string {
  const start = readme.indexOf(SHARED_START)
  const end = readme.indexOf(SHARED_END)
  if (start < 0 || end < start || readme.indexOf(SHARED_START, start + 1) >= 0 || readme.indexOf(SHARED_END, end + 1) >= 0) {
    throw new Error(`shared-modules: packages/shared/README.md needs exactly one "${SHARED_START}" followed by one "${SHARED_END}".`)
  }
  return `${readme.slice(0, start + SHARED_START.length)}\n${table}\n${readme.slice(end)}`
}
