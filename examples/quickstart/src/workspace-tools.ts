import { constants } from 'node:fs'
import { type FileHandle, lstat, open, readdir, readlink, realpath, stat } from 'node:fs/promises'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { Context, Schema } from 'cordis'
import { count } from '@cordis-subagents/shared'
import { z } from 'zod'
import type { ToolExecContext } from '@cordis-subagents/tools'

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
  root: Schema.string().description('Directory the tools are confined to. Default: the calling agent\'s working directory (its host sets it), else the process working directory.'),
  prefix: Schema.string().default('').description('Prefix of the tool names (e.g. `ws_` gives `ws_read_file`).'),
  maxReadBytes: count({ min: 1 }).default(16 * 1024).description('Most bytes `read_file` returns.'),
  maxEntries: count({ min: 1 }).default(200).description('Most entries `list_files` returns.'),
  maxMatches: count({ min: 1 }).default(50).description('Most matching lines `search_text` returns.'),
  maxSearchFiles: count({ min: 1 }).default(2000).description('Most files `search_text` looks at.'),
})

/** Directories never listed or searched. */
const SKIPPED = new Set(['node_modules', '.git', 'lib', 'coverage', '.nyc_output'])

export type WorkspaceErrorCode = 'OUTSIDE_ROOT' | 'NOT_FOUND' | 'NOT_A_FILE' | 'NOT_A_DIRECTORY' | 'HARD_LINK' | 'CHANGED'

export class WorkspaceError extends Error {
  constructor(readonly code: WorkspaceErrorCode, message: string) {
    super(message)
    this.name = 'WorkspaceError'
  }
}

/**
 * Resolves `path` (relative to `root`) and proves that it, and what it really points to, stay
 * inside `root`. Only a `..` path segment escapes: a name such as `..notes` is an ordinary name.
 * This is a check on names; reading goes through `openConfined`, which verifies the opened file.
 */
export async function confine(root: string, path: string): Promise<{ absolute: string; display: string; realRoot: string }> {
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
  return { absolute: real, display: relative(realRoot, real) || '.', realRoot }
}

/** Non-blocking so that a FIFO swapped in never blocks a worker thread; it is refused after fstat. */
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0)

/**
 * Opens a regular file inside `root` and proves that the file actually opened is inside, so a
 * concurrent swap of the path for a symlink to the outside cannot slip through between a check
 * and the open. Open first, then verify the open descriptor:
 * - Linux: the kernel's own path of the opened file (`/proc/self/fd/N`) must be inside the root;
 * - elsewhere: the path, resolved again, must name the same device and inode (`lstat`, so a
 *   final-component swap is caught; a swap of an intermediate directory in that window is not).
 * Either failure refuses the read (`OUTSIDE_ROOT` / `CHANGED`). A file with more than one hard
 * link is refused (`HARD_LINK`): one of its other names may be outside the root, and a hard link
 * cannot be traced back to its other names.
 */
export async function openConfined(root: string, path: string, verify: 'auto' | 'inode' = 'auto'): Promise<{ handle: FileHandle; size: number; display: string }> {
  const { absolute, display, realRoot } = await confine(root, path)
  let handle: FileHandle
  try {
    handle = await open(absolute, OPEN_FLAGS)
  } catch {
    throw new WorkspaceError('NOT_FOUND', `"${path}" does not exist in the workspace. Use list_files to see what does.`)
  }
  try {
    const opened = await handle.stat()
    const kernelPath = verify === 'auto' ? await openedPath(handle) : undefined
    if (kernelPath !== undefined) {
      if (!inside(realRoot, kernelPath)) {
        throw new WorkspaceError('OUTSIDE_ROOT', `Refused "${path}": the file opened is outside the workspace root (it was replaced by a link while being opened).`)
      }
    } else {
      const again = await confine(root, path).catch(() => undefined)
      const current = again ? await lstat(again.absolute).catch(() => undefined) : undefined
      if (!current || current.dev !== opened.dev || current.ino !== opened.ino) {
        throw new WorkspaceError('CHANGED', `Refused "${path}": it changed while it was being opened (it may have been replaced by a link). Try again.`)
      }
    }
    if (!opened.isFile()) throw new WorkspaceError('NOT_A_FILE', `"${path}" is not a regular file. Use list_files for directories.`)
    if (opened.nlink > 1) {
      throw new WorkspaceError('HARD_LINK', `Refused "${path}": it has ${opened.nlink} hard links, and another of its names may be outside the workspace root. Only files with a single name are read.`)
    }
    return { handle, size: opened.size, display }
  } catch (error) {
    await handle.close()
    throw error
  }
}

/** The path the kernel holds for an open descriptor (Linux `/proc/self/fd`), else undefined. */
async function openedPath(handle: FileHandle): Promise<string | undefined> {
  if (process.platform !== 'linux') return undefined
  try {
    const target = await readlink(`/proc/self/fd/${handle.fd}`)
    // A file unlinked (or renamed over) after the open keeps its last path plus this suffix.
    return target.endsWith(' (deleted)') ? target.slice(0, -' (deleted)'.length) : target
  } catch {
    return undefined
  }
}

function inside(root: string, target: string): boolean {
  const rel = relative(root, target)
  return rel === '' || (!isAbsolute(rel) && rel.split(sep)[0] !== '..')
}

function errorResult(error: unknown) {
  return { content: error instanceof Error ? error.message : String(error), isError: true }
}

export async function listFiles(root: string, path: string, maxEntries: number): Promise<string> {
  const { absolute, display } = await confine(root, path)
  const before = await stat(absolute)
  if (!before.isDirectory()) {
    throw new WorkspaceError('NOT_A_DIRECTORY', `"${path}" is a file, not a directory. Use read_file to read it.`)
  }
  const listed = await readdir(absolute, { withFileTypes: true })
  // Node has no readdir on an open descriptor: prove afterwards that the path still names the
  // directory that was checked (a swap for a link to the outside during the read is refused).
  const again = await confine(root, path).catch(() => undefined)
  const after = again ? await stat(again.absolute).catch(() => undefined) : undefined
  if (!again || again.absolute !== absolute || !after || after.dev !== before.dev || after.ino !== before.ino) {
    throw new WorkspaceError('CHANGED', `Refused "${path}": it changed while it was being listed (it may have been replaced by a link). Try again.`)
  }
  const dirents = listed
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
  const { handle, size } = await openConfined(root, path)
  try {
    const buffer = Buffer.alloc(Math.min(maxBytes, size))
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    const text = buffer.subarray(0, bytesRead).toString('utf8')
    return size > maxBytes ? `${text}\n... [truncated: showing ${bytesRead} of ${size} bytes]` : text
  } finally {
    await handle.close()
  }
}

export async function searchText(
  root: string, query: string, path: string, limits: { maxMatches: number; maxFiles: number },
): Promise<string> {
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
      let text: string
      try {
        text = await readFileCapped(realRoot, relative(realRoot, full), 512 * 1024)
      } catch {
        continue // refused (hard link, changed while opened) or gone: not searched
      }
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
  const fixedRoot = config.root === undefined ? undefined : resolve(config.root)
  /** The configured root, else the calling agent's cwd (set by its host, never by a model), else the process cwd. */
  const rootOf = (exec: ToolExecContext) => {
    if (fixedRoot) return fixedRoot
    const cwd = (exec.agent as { cwd?: unknown }).cwd
    return typeof cwd === 'string' && isAbsolute(cwd) ? cwd : process.cwd()
  }
  const prefix = config.prefix ?? ''
  const path = z.string().default('.').describe('Path relative to the workspace root ("." is the root).')

  ctx.tools.register({
    name: `${prefix}list_files`,
    description: `List the entries of a directory in the workspace (read-only; directories end in "/"; node_modules, .git and build output are skipped). Paths are relative to the workspace root.`,
    input: z.object({ path }),
    execute: async (input, exec) => {
      try {
        return { content: await listFiles(rootOf(exec), input.path, config.maxEntries ?? 200) }
      } catch (error) {
        return errorResult(error)
      }
    },
  })

  ctx.tools.register({
    name: `${prefix}read_file`,
    description: `Read a text file in the workspace (read-only, at most ${config.maxReadBytes ?? 16384} bytes). Paths are relative to the workspace root.`,
    input: z.object({ path: z.string().min(1).describe('File path relative to the workspace root, e.g. "packages/tools/package.json".') }),
    execute: async (input, exec) => {
      try {
        return { content: await readFileCapped(rootOf(exec), input.path, config.maxReadBytes ?? 16384) }
      } catch (error) {
        return errorResult(error)
      }
    },
  })

  ctx.tools.register({
    name: `${prefix}search_text`,
    description: 'Find lines containing a text (case-insensitive) in the workspace files under a path (read-only; skips node_modules, .git, build output and hidden files).',
    input: z.object({ query: z.string().min(1).describe('Text to look for.'), path }),
    execute: async (input, exec) => {
      try {
        const limits = { maxMatches: config.maxMatches ?? 50, maxFiles: config.maxSearchFiles ?? 2000 }
        return { content: await searchText(rootOf(exec), input.query, input.path, limits) }
      } catch (error) { return errorResult(error) }
    },
  })
}
