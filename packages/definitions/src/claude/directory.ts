import { constants, type Dir, type Dirent, type Stats } from 'node:fs'
import { type FileHandle, lstat, open, opendir } from 'node:fs/promises'
import { join } from 'node:path'
import { DefinitionError } from '../errors.js'
import type { AgentDefinition } from '../types.js'
import { type ClaudeMapping, MAX_AGENT_FILE_BYTES, parseAgentFile } from './parse.js'

/** Most agent files one directory may hold. */
const MAX_AGENT_FILES = 200
/**
 * Most entries of any kind (agent files, other files, folders) a read looks through: a reload lists the
 * directory again, so past this it fails (`AGENT_DIR_TOO_LARGE`) rather than cost more with every unrelated file.
 */
const MAX_DIRECTORY_ENTRIES = 10_000
/** Entries listed per call into the thread pool. */
const LIST_BATCH = 1024

/** What an agents directory's reader and watcher warn about (the entry logs `CODE: message`). */
type AgentDirectoryWarningCode =
  /** A `*.md` entry is a symbolic link: skipped, so a link cannot make a file outside the directory a prompt. */
  | 'AGENT_FILE_SYMLINK'
  /** The watched directory was removed or renamed away; the earlier agents stay until it is back. */
  | 'AGENT_DIR_GONE'
  /** The directory was replaced by another one (a deploy's rename); the watch follows the new one and reads it. */
  | 'AGENT_DIR_REPLACED'
  /** The watcher failed; it is armed again after `retryDelay`. */
  | 'AGENT_DIR_WATCH'

export type AgentDirectoryWarn = (code: AgentDirectoryWarningCode, message: string) => void

export interface AgentDirectoryOptions {
  warn: AgentDirectoryWarn
  /** Parses one file; replaceable so a test can count the parses. */
  parse?: typeof parseAgentFile
}

/** The last parse of one file, kept while its identity and times stay the same. */
interface Parsed {
  dev: number
  ino: number
  size: number
  mtimeMs: number
  ctimeMs: number
  result: AgentDefinition | DefinitionError
}

// O_NOFOLLOW: a symbolic link swapped in after the lstat still is not followed; O_NONBLOCK: a FIFO swapped in does not block the open.
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0)

const errno = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error)
const same = (parsed: Parsed, stat: Stats) => parsed.dev === stat.dev && parsed.ino === stat.ino && parsed.size === stat.size
  && parsed.mtimeMs === stat.mtimeMs && parsed.ctimeMs === stat.ctimeMs

/**
 * The `*.md` files of one directory (not recursive, sorted) as definitions; any bad file fails them
 * all. A file whose inode, size and times did not change since the last read is not read or parsed
 * again. Symbolic links are skipped with `AGENT_FILE_SYMLINK`. A read is asynchronous (the event loop
 * turns between files; one file's parse, at most 256 KiB, is the longest it is held), and reads run one
 * at a time: a read asked for while one runs starts after it.
 */
export class AgentDirectory {
  private files = new Map<string, Parsed>()
  private links = new Set<string>()
  private readonly parse: typeof parseAgentFile
  private last: Promise<unknown> = Promise.resolve()

  constructor(readonly dir: string, private readonly mapping: ClaudeMapping, private readonly baseDir: string,
    private readonly options: AgentDirectoryOptions) {
    this.parse = options.parse ?? parseAgentFile
  }

  read(): Promise<AgentDefinition[]> {
    const next = this.last.then(() => this.readNow())
    this.last = next.catch(() => undefined)
    return next
  }

  private async readNow(): Promise<AgentDefinition[]> {
    const names = await this.agentFileNames()
    const files = new Map<string, Parsed>()
    const links = new Set<string>()
    // One file at a time: files read together would have their parses run back to back, in one turn of the loop.
    for (const name of names) {
      const parsed = await this.file(name, links)
      if (parsed) files.set(name, parsed)
    }
    this.files = files
    this.links = links
    const results = [...files.values()].map((parsed) => parsed.result)
    const failed = results.find((result) => result instanceof DefinitionError)
    if (failed) throw failed
    return results as AgentDefinition[]
  }

  /** The `*.md` names of the directory, sorted; looks through at most `MAX_DIRECTORY_ENTRIES` entries. */
  private async agentFileNames(): Promise<string[]> {
    const unreadable = (error: unknown) =>
      new DefinitionError('AGENT_FILE', `${this.dir}: the agents directory cannot be read (${errno(error)}).`)
    let handle: Dir
    try {
      handle = await opendir(this.dir, { bufferSize: LIST_BATCH })
    } catch (error) {
      throw unreadable(error)
    }
    const names: string[] = []
    try {
      for (let entries = 1; ; entries++) {
        let entry: Dirent | null
        try {
          entry = await handle.read()
        } catch (error) {
          throw unreadable(error)
        }
        if (!entry) break
        if (entries > MAX_DIRECTORY_ENTRIES) {
          throw new DefinitionError('AGENT_DIR_TOO_LARGE', `${this.dir}: more than ${MAX_DIRECTORY_ENTRIES} entries; a read looks `
            + `through at most ${MAX_DIRECTORY_ENTRIES} (files, folders, anything), so that a reload's cost stays bounded. `
            + 'Give the agent files a directory of their own (the entry\'s `dir`).')
        }
        if (!isAgentFileName(entry.name)) continue
        names.push(entry.name)
        if (names.length > MAX_AGENT_FILES) {
          throw new DefinitionError('AGENT_FILE', `${this.dir}: more than ${MAX_AGENT_FILES} agent files; at most `
            + `${MAX_AGENT_FILES} are read. Split them into several directories, one entry each.`)
        }
      }
    } finally {
      await handle.close().catch(() => undefined)
    }
    return names.sort()
  }

  /** One file's parse: the last one when the file is unchanged; undefined to skip it. */
  private async file(name: string, links: Set<string>): Promise<Parsed | undefined> {
    const file = join(this.dir, name)
    let stat: Stats
    try {
      stat = await lstat(file)
    } catch (error) {
      // Gone between the listing and the read (a rename-save in progress): the next event reads it again.
      if (errno(error) === 'ENOENT') return undefined
      throw new DefinitionError('AGENT_FILE', `${file}: cannot be read (${errno(error)}).`)
    }
    if (stat.isSymbolicLink()) return this.skipLink(name, file, links)
    if (!stat.isFile()) return undefined
    const last = this.files.get(name)
    if (last && same(last, stat)) return last
    let handle: FileHandle
    try {
      handle = await open(file, OPEN_FLAGS)
    } catch (error) {
      const code = errno(error)
      if (code === 'ENOENT') return undefined
      if (code === 'ELOOP' || code === 'EMLINK') return this.skipLink(name, file, links)
      return this.record(stat, new DefinitionError('AGENT_FILE', `${file}: cannot be read (${code}).`))
    }
    try {
      const opened = await handle.stat()
      if (!opened.isFile()) return undefined
      const text = opened.size > MAX_AGENT_FILE_BYTES ? undefined : await readAtMost(handle, MAX_AGENT_FILE_BYTES)
      if (text === undefined) {
        const why = `${file}: larger than the ${MAX_AGENT_FILE_BYTES} bytes an agent file may hold; shorten it.`
        return this.record(opened, new DefinitionError('AGENT_FILE', why))
      }
      return this.record(opened, this.parsed(file, text))
    } catch (error) {
      return this.record(stat, new DefinitionError('AGENT_FILE', `${file}: cannot be read (${errno(error)}).`))
    } finally {
      await handle.close().catch(() => undefined)
    }
  }

  private parsed(file: string, text: string): AgentDefinition | DefinitionError {
    try {
      return this.parse(file, text, this.mapping, this.baseDir)
    } catch (error) {
      if (error instanceof DefinitionError) return error
      throw error
    }
  }

  private record(stat: Stats, result: AgentDefinition | DefinitionError): Parsed {
    return { dev: stat.dev, ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs, result }
  }

  private skipLink(name: string, file: string, links: Set<string>): undefined {
    links.add(name)
    // Once per link, not at every read while it stays.
    if (!this.links.has(name)) {
      this.options.warn('AGENT_FILE_SYMLINK', `${file} is a symbolic link and is skipped (agent files must be regular files `
        + `inside ${this.dir}); copy the file into the directory instead.`)
    }
    return undefined
  }
}

export function isAgentFileName(name: string): boolean {
  return name.toLowerCase().endsWith('.md')
}

/** The file's text, or undefined when it holds more than `limit` bytes. */
async function readAtMost(handle: FileHandle, limit: number): Promise<string | undefined> {
  const buffer = Buffer.allocUnsafe(limit + 1)
  let length = 0
  for (;;) {
    const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null)
    if (bytesRead === 0) break
    length += bytesRead
    if (length > limit) return undefined
  }
  return buffer.toString('utf8', 0, length)
}
