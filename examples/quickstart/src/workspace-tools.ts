import { lstat, open, readdir, realpath, stat } from 'node:fs/promises'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { Context, Schema } from 'cordis'
import { z } from 'zod'
import type {} from '@cordis-subagents/tools'

/**
 * Read-only workspace tools for the quick start: `list_files`, `read_file`, `search_text`.
 * Every path is resolved against the configured root; anything that resolves (or, through a
 * symlink, really points) outside the root is refused. Output sizes are capped.
 */
export const name = 'workspace-tools'
export const reusable = true
export const inject = ['tools']

export interface Config {
  root?: string
  prefix: string
  maxReadBytes: number
  maxEntries: number
  maxMatches: number
  maxSearchFiles: number
}

export const Config: Schema<Config> = Schema.object({
  root: Schema.string().description('Directory the tools are confined to. Default: the process working directory.'),
  prefix: Schema.string().default('').description('Prefix of the tool names (e.g. `ws_` gives `ws_read_file`).'),
  maxReadBytes: Schema.natural().min(1).default(16 * 1024).description('Most bytes `read_file` returns.'),
  maxEntries: Schema.natural().min(1).default(200).description('Most entries `list_files` returns.'),
  maxMatches: Schema.natural().min(1).default(50).description('Most matching lines `search_text` returns.'),
  maxSearchFiles: Schema.natural().min(1).default(2000).description('Most files `search_text` looks at.'),
})

/** Directories never listed or searched. */
const SKIPPED = new Set(['node_modules', '.git', 'lib', 'coverage', '.nyc_output'])

export class WorkspaceError extends Error {
  constructor(readonly code: 'OUTSIDE_ROOT' | 'NOT_FOUND' | 'NOT_A_FILE' | 'NOT_A_DIRECTORY', message: string) {
    super(message)
    this.name = 'WorkspaceError'
  }
}

/** Resolves `path` (relative to `root`) and proves that it, and what it really points to, stay inside `root`. */
export async function confine(root: string, path: string): Promise<{ absolute: string; display: string }> {
  const realRoot = await realpath(root)
  if (isAbsolute(path)) {
    throw new WorkspaceError('OUTSIDE_ROOT', `Refused "${path}": give a path relative to the workspace root, not an absolute path.`)
  }
  const absolute = resolve(realRoot, path)
  if (!inside(realRoot, absolute)) {
    throw new WorkspaceError('OUTSIDE_ROOT', `Refused "${path}": it is outside the workspace root. Use a path inside the workspace (e.g. "packages").`)
  }
  let real: string
  try {
    real = await realpath(absolute)
  } catch {
    throw new WorkspaceError('NOT_FOUND', `"${path}" does not exist in the workspace. Use list_files to see what does.`)
  }
  if (!inside(realRoot, real)) {
    throw new WorkspaceError('OUTSIDE_ROOT', `Refused "${path}": it is a link to a location outside the workspace root.`)
  }
  return { absolute: real, display: relative(realRoot, real) || '.' }
}

function inside(root: string, target: string): boolean {
  const rel = relative(root, target)
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel) && rel.split(sep)[0] !== '..')
}

function errorResult(error: unknown) {
  return { content: error instanceof Error ? error.message : String(error), isError: true }
}

export async function listFiles(root: string, path: string, maxEntries: number): Promise<string> {
  const { absolute, display } = await confine(root, path)
  if (!(await stat(absolute)).isDirectory()) {
    throw new WorkspaceError('NOT_A_DIRECTORY', `"${path}" is a file, not a directory. Use read_file to read it.`)
  }
  const dirents = (await readdir(absolute, { withFileTypes: true }))
    .filter((d) => !SKIPPED.has(d.name))
    .sort((a, b) => a.name.localeCompare(b.name))
  const lines = [`${display}/ (${dirents.length} entries)`]
  for (const dirent of dirents.slice(0, maxEntries)) {
    if (dirent.isDirectory()) lines.push(`${dirent.name}/`)
    else if (dirent.isSymbolicLink()) lines.push(`${dirent.name} -> (link)`)
    else lines.push(dirent.name)
  }
  if (dirents.length > maxEntries) lines.push(`... ${dirents.length - maxEntries} more entries not shown`)
  return lines.join('\n')
}

export async function readFileCapped(root: string, path: string, maxBytes: number): Promise<string> {
  const { absolute } = await confine(root, path)
  const info = await stat(absolute)
  if (!info.isFile()) throw new WorkspaceError('NOT_A_FILE', `"${path}" is not a regular file. Use list_files for directories.`)
  const handle = await open(absolute, 'r')
  try {
    const buffer = Buffer.alloc(Math.min(maxBytes, info.size))
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    const text = buffer.subarray(0, bytesRead).toString('utf8')
    return info.size > maxBytes ? `${text}\n... [truncated: showing ${bytesRead} of ${info.size} bytes]` : text
  } finally {
    await handle.close()
  }
}

export async function searchText(root: string, query: string, path: string, limits: { maxMatches: number; maxFiles: number }): Promise<string> {
  const { absolute, display } = await confine(root, path)
  const realRoot = await realpath(root)
  const matches: string[] = []
  let files = 0
  let more = false
  const needle = query.toLowerCase()
  const walk = async (dir: string): Promise<void> => {
    const dirents = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))
    for (const dirent of dirents) {
      if (matches.length >= limits.maxMatches || files >= limits.maxFiles) { more = true; return }
      if (SKIPPED.has(dirent.name) || dirent.name.startsWith('.')) continue
      const full = join(dir, dirent.name)
      if (dirent.isDirectory()) { await walk(full); continue }
      if (!dirent.isFile()) continue // symlinks are not followed
      const info = await lstat(full)
      if (info.size > 512 * 1024) continue
      files++
      const text = await readFileCapped(realRoot, relative(realRoot, full), 512 * 1024)
      if (text.includes('\u0000')) continue
      const lines = text.split('\n')
      for (let i = 0; i < lines.length; i++) {
        if (!lines[i].toLowerCase().includes(needle)) continue
        matches.push(`${relative(realRoot, full)}:${i + 1}: ${lines[i].trim().slice(0, 200)}`)
        if (matches.length >= limits.maxMatches) { more = true; return }
      }
    }
  }
  if ((await stat(absolute)).isDirectory()) await walk(absolute)
  else {
    const text = await readFileCapped(realRoot, display, 512 * 1024)
    text.split('\n').forEach((line, i) => {
      if (line.toLowerCase().includes(needle) && matches.length < limits.maxMatches) matches.push(`${display}:${i + 1}: ${line.trim().slice(0, 200)}`)
    })
  }
  if (!matches.length) return `No matches for "${query}" in "${display}".`
  return matches.join('\n') + (more ? `\n... stopped after ${matches.length} matches / ${files} files` : '')
}

export function apply(ctx: Context, config: Config) {
  const root = resolve(config.root ?? process.cwd())
  const prefix = config.prefix ?? ''
  const path = z.string().default('.').describe('Path relative to the workspace root ("." is the root).')

  ctx.tools.register({
    name: `${prefix}list_files`,
    description: `List the entries of a directory in the workspace (read-only; directories end in "/"; node_modules, .git and build output are skipped). Paths are relative to the workspace root.`,
    input: z.object({ path }),
    execute: async (input) => {
      try { return { content: await listFiles(root, input.path, config.maxEntries ?? 200) } } catch (error) { return errorResult(error) }
    },
  })

  ctx.tools.register({
    name: `${prefix}read_file`,
    description: `Read a text file in the workspace (read-only, at most ${config.maxReadBytes ?? 16384} bytes). Paths are relative to the workspace root.`,
    input: z.object({ path: z.string().min(1).describe('File path relative to the workspace root, e.g. "packages/tools/package.json".') }),
    execute: async (input) => {
      try { return { content: await readFileCapped(root, input.path, config.maxReadBytes ?? 16384) } } catch (error) { return errorResult(error) }
    },
  })

  ctx.tools.register({
    name: `${prefix}search_text`,
    description: 'Find lines containing a text (case-insensitive) in the workspace files under a path (read-only; skips node_modules, .git, build output and hidden files).',
    input: z.object({ query: z.string().min(1).describe('Text to look for.'), path }),
    execute: async (input) => {
      try {
        return { content: await searchText(root, input.query, input.path, { maxMatches: config.maxMatches ?? 50, maxFiles: config.maxSearchFiles ?? 2000 }) }
      } catch (error) { return errorResult(error) }
    },
  })
}
