import { randomUUID } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { homedir } from 'node:os'
import { isAbsolute, join } from 'node:path'
import type { Logger } from 'cordis'
import type { Message } from '@cordis-subagents/agent'
import { describeError } from '@cordis-subagents/shared'

/**
 * Where served sessions are kept, so `session/load` works in a later process (an ACP client such
 * as acpx starts a new agent process per command). One JSON file per session: its cwd and its
 * completed turns, written atomically (temp file + rename) with mode 0600 in a 0700 directory.
 * Bounded: a session larger than `maxBytes` is not stored (the live session goes on), a stored
 * file larger than that is refused when loading, and only the `maxSessions` most recently saved
 * are kept.
 */
export interface SessionStoreLimits {
  /** Largest stored session (bytes of JSON). */
  maxBytes: number
  /** Sessions kept; saving one more removes the least recently saved. */
  maxSessions: number
}

export const DEFAULT_STORE_LIMITS: SessionStoreLimits = { maxBytes: 4 * 1024 * 1024, maxSessions: 100 }

const SESSION_ID = /^session-\d{1,10}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export interface StoredSession {
  cwd: string
  messages: Message[]
}

/** `$XDG_STATE_HOME/cordis-subagents/serve-acp/sessions` (else `~/.local/state/…`). */
export function defaultStoreDir(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state')
  return join(state, 'cordis-subagents', 'serve-acp', 'sessions')
}

/** `session-<pid of the process that opened it>-<uuid>`: unique, and it shows which process served it first. */
export function newSessionId(): string {
  return `session-${process.pid}-${randomUUID()}`
}

/** A session id this server could have issued: nothing else becomes a file name. */
export function isSessionId(value: unknown): value is string {
  return typeof value === 'string' && SESSION_ID.test(value)
}

/** Bytes read of a stored file to find its cwd (an absolute path, at most a few KiB escaped). */
const HEAD_BYTES = 32 * 1024
const CWD_HEAD = /^\{"cwd":("(?:[^"\\]|\\.)*")/

/** The cwd at the head of a stored session's JSON, or undefined when the head is not one of ours. */
function storedCwd(head: string): string | undefined {
  const match = CWD_HEAD.exec(head)
  if (!match) return undefined
  try {
    const cwd: unknown = JSON.parse(match[1]!)
    return typeof cwd === 'string' ? cwd : undefined
  } catch {
    return undefined
  }
}

export class SessionStore {
  constructor(readonly dir: string, readonly limits: SessionStoreLimits = DEFAULT_STORE_LIMITS) {}

  /** Writes the session atomically. Returns false when it is too large to keep. */
  async save(id: string, session: StoredSession): Promise<boolean> {
    if (!isSessionId(id)) throw new Error(`not a session id: ${JSON.stringify(id)}`)
    const json = JSON.stringify(session)
    if (Buffer.byteLength(json) > this.limits.maxBytes) return false
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    const file = join(this.dir, `${id}.json`)
    const temp = `${file}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`
    const handle = await open(temp, 'w', 0o600)
    try {
      await handle.writeFile(json)
    } finally {
      await handle.close()
    }
    await rename(temp, file).catch(async (error) => {
      await rm(temp, { force: true })
      throw error
    })
    await this.prune()
    return true
  }

  /** Removes the least recently saved sessions beyond `maxSessions`. */
  private async prune(): Promise<void> {
    const names = (await readdir(this.dir)).filter((name) => name.endsWith('.json') && isSessionId(name.slice(0, -5)))
    if (names.length <= this.limits.maxSessions) return
    const mtime = async (name: string) => (await stat(join(this.dir, name)).catch(() => undefined))?.mtimeMs ?? 0
    const dated = await Promise.all(names.map(async (name) => ({ name, mtime: await mtime(name) })))
    dated.sort((a, b) => a.mtime - b.mtime)
    await Promise.all(dated.slice(0, dated.length - this.limits.maxSessions).map(({ name }) => rm(join(this.dir, name), { force: true })))
  }

  /**
   * Every stored session's id, cwd and last save (for session/list). Reads only the head of each
   * file (the cwd is written first), so listing stays cheap however long the conversations are.
   */
  async list(): Promise<Array<{ id: string; cwd: string; updatedAt: number }>> {
    const names = await readdir(this.dir).catch(() => [] as string[])
    const listed = await Promise.all(names.map(async (name) => {
      const id = name.slice(0, -5)
      if (!name.endsWith('.json') || !isSessionId(id)) return undefined
      const file = join(this.dir, name)
      try {
        const handle = await open(file, 'r')
        try {
          const head = Buffer.alloc(HEAD_BYTES)
          const { bytesRead } = await handle.read(head, 0, HEAD_BYTES, 0)
          const cwd = storedCwd(head.subarray(0, bytesRead).toString('utf8'))
          const info = await handle.stat()
          return cwd === undefined ? undefined : { id, cwd, updatedAt: info.mtimeMs }
        } finally {
          await handle.close()
        }
      } catch {
        return undefined
      }
    }))
    return listed.filter((entry) => entry !== undefined)
  }

  /** The stored session, or undefined when there is none; throws when the file is unusable. */
  async load(id: string): Promise<StoredSession | undefined> {
    if (!isSessionId(id)) return undefined
    const file = join(this.dir, `${id}.json`)
    const info = await stat(file).catch(() => undefined)
    if (!info?.isFile()) return undefined
    if (info.size > this.limits.maxBytes) throw new Error(`the stored session is ${info.size} bytes, more than ${this.limits.maxBytes}`)
    const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<StoredSession>
    if (typeof parsed.cwd !== 'string' || !Array.isArray(parsed.messages)) throw new Error('the stored session is malformed')
    return { cwd: parsed.cwd, messages: parsed.messages }
  }
}

type LiveSession = { id: string; cwd: string; agent: { transcript: { completedMessages(): readonly Message[] } } }

/** Stores a live session's completed turns (when there is a store); a failure or a session past `maxBytes` is logged: it goes on. */
export async function persistSession(store: SessionStore | undefined, session: LiveSession, logger: Logger): Promise<void> {
  if (!store) return
  try {
    const kept = await store.save(session.id, { cwd: session.cwd, messages: [...session.agent.transcript.completedMessages()] })
    if (!kept) logger.warn('session %s is larger than maxSessionBytes; it is not stored and cannot be loaded later', session.id)
  } catch (error) {
    logger.warn('session %s could not be stored: %s', session.id, describeError(error))
  }
}
