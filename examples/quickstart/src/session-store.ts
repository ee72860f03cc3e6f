import { randomUUID } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { homedir } from 'node:os'
import { isAbsolute, join } from 'node:path'
import type { Message } from '@cordis-subagents/agent'

/**
 * Where the quick start's ACP agent keeps its sessions, so `session/load` works in a later
 * process (an ACP client such as acpx starts a new agent process per command). One JSON file per
 * session: its cwd and its completed turns. Bounded: a session larger than `MAX_SESSION_BYTES` is
 * not stored (the live session goes on; the agent says so on stderr), a stored file larger than
 * that is refused when loading, and only the `MAX_SESSIONS` most recently saved are kept.
 */
export const MAX_SESSION_BYTES = 4 * 1024 * 1024
/** Sessions kept; saving one more removes the least recently saved. */
export const MAX_SESSIONS = 100

const SESSION_ID = /^session-\d{1,10}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export interface StoredSession {
  cwd: string
  messages: Message[]
}

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.QUICKSTART_STATE_DIR) return env.QUICKSTART_STATE_DIR
  const state = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state')
  return join(state, 'cordis-subagents-quickstart', 'sessions')
}

/** `session-<pid of the process that opened it>-<uuid>`: unique, and it shows which process served it first. */
export function newSessionId(): string {
  return `session-${process.pid}-${randomUUID()}`
}

/** A session id this store could have issued: nothing else becomes a file name. */
export function isSessionId(value: unknown): value is string {
  return typeof value === 'string' && SESSION_ID.test(value)
}

export class SessionStore {
  constructor(readonly dir: string) {}

  /** Writes the session atomically (temp file + rename). Returns false when it is too large to keep. */
  async save(id: string, session: StoredSession): Promise<boolean> {
    if (!isSessionId(id)) throw new Error(`not a session id: ${JSON.stringify(id)}`)
    const json = JSON.stringify(session)
    if (Buffer.byteLength(json) > MAX_SESSION_BYTES) return false
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    const file = join(this.dir, `${id}.json`)
    const temp = `${file}.${process.pid}.tmp`
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

  /** Removes the least recently saved sessions beyond `MAX_SESSIONS`. */
  private async prune(): Promise<void> {
    const names = (await readdir(this.dir)).filter((name) => name.endsWith('.json') && isSessionId(name.slice(0, -5)))
    if (names.length <= MAX_SESSIONS) return
    const mtime = async (name: string) => (await stat(join(this.dir, name)).catch(() => undefined))?.mtimeMs ?? 0
    const dated = await Promise.all(names.map(async (name) => ({ name, mtime: await mtime(name) })))
    dated.sort((a, b) => a.mtime - b.mtime)
    await Promise.all(dated.slice(0, dated.length - MAX_SESSIONS).map(({ name }) => rm(join(this.dir, name), { force: true })))
  }

  /** The stored session, or undefined when there is none; throws when the file is unusable. */
  async load(id: string): Promise<StoredSession | undefined> {
    if (!isSessionId(id)) return undefined
    const file = join(this.dir, `${id}.json`)
    const info = await stat(file).catch(() => undefined)
    if (!info?.isFile()) return undefined
    if (info.size > MAX_SESSION_BYTES) throw new Error(`the stored session is ${info.size} bytes, more than ${MAX_SESSION_BYTES}`)
    const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<StoredSession>
    if (typeof parsed.cwd !== 'string' || !Array.isArray(parsed.messages)) throw new Error('the stored session is malformed')
    return { cwd: parsed.cwd, messages: parsed.messages }
  }
}
