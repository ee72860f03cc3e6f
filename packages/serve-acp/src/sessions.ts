import type { Agent } from '@cordis-subagents/agent'
import type { SentServers } from '@cordis-subagents/mcp'
import type { TraceContextHeaders } from '@cordis-subagents/shared'

/** Spend of a session's finished turns (what the next turn's reports start from). */
interface SessionSpend {
  steps: number
  tokens: number
  toolCalls: number
  delegations: number
}

export interface Session {
  id: string
  agent: Agent
  cwd: string
  /** The session's depth (for `{depth}` in the persona, and what it was checked against). */
  depth: number
  /** The trace context session/new (or session/load) carried; a prompt's own `_meta` wins. */
  trace?: TraceContextHeaders
  /** The running turn's abort; unset while idle. */
  controller?: AbortController
  /** When the session last opened or ended a turn (ms since the epoch), for session/list. */
  updatedAt: number
  /** Spend of the turns finished in this process since the session was opened or loaded. */
  spent: SessionSpend
  /** The crossing the session's agent was made with (`crossingKey`), if its `_meta` carried one. */
  crossing?: string
  /** The MCP servers the client sent for this session (their tools are its agent's own); stopped with it. */
  mcp?: SentServers
}

/**
 * The live sessions, least recently used first, bounded by `max`. Making room closes the least
 * recently used idle session (its agent is disposed; a stored one can be loaded again); when every
 * session is running a turn or parked on a question there is no room. A session being opened holds
 * its slot from before its client's MCP servers start (`reserve`) until it is added or given up
 * (`release`), so open sessions and openings together never pass `max`.
 */
export class SessionTable {
  private readonly sessions = new Map<string, Session>()
  /** Ids a load or resume is opening now (a second one at once would make a second agent under the id), and its end. */
  private readonly loading = new Map<string, { ended: Promise<void>; end(): void }>()
  /** Slots held by sessions being opened (`reserve` … `release`). */
  private opening = 0
  /** Requests waiting for an opening to end (`reserve`), woken by `release`. */
  private waiting: Array<() => void> = []

  constructor(private readonly max: number) {}

  get size(): number {
    return this.sessions.size
  }

  get(id: string): Session | undefined {
    const session = this.sessions.get(id)
    if (session) {
      // Most recently used last.
      this.sessions.delete(id)
      this.sessions.set(id, session)
    }
    return session
  }

  /** Frees a slot for one more session; returns the sessions closed for it, or undefined when every slot is busy. */
  private makeRoom(): Session[] | undefined {
    const taken = this.sessions.size + this.opening
    const closed: Session[] = []
    for (const session of this.sessions.values()) {
      if (taken - closed.length < this.max) break
      // A parked session (its turn waits for an answer, the next prompt) is not idle: closing it would lose the question.
      if (!session.controller && !session.agent.parked) closed.push(session)
    }
    if (taken - closed.length >= this.max) return undefined
    for (const session of closed) this.sessions.delete(session.id)
    return closed
  }

  /**
   * Takes a slot for a session about to open, before anything of it (its client's MCP servers) starts: the least
   * recently used idle sessions are closed for it, and ended (their servers reaped) before this resolves true. While
   * other openings hold the slots it waits for one to end; false when every slot is held by a session running a turn
   * or parked. `stopped()` true (the server closes) ends the wait with an error. A true answer must be `release`d.
   */
  async reserve(stopped: () => boolean): Promise<boolean> {
    for (;;) {
      if (stopped()) throw new Error('the ACP server is shutting down; no session opens now')
      const closed = this.makeRoom()
      if (closed) {
        this.opening++
        await Promise.allSettled(closed.map(endSession))
        return true
      }
      if (!this.opening) return false
      await new Promise<void>((resolve) => this.waiting.push(resolve))
    }
  }

  /** Gives back a slot `reserve` took (once the session is added, or did not open). */
  release(): void {
    this.opening--
    this.wakeWaiting()
  }

  /** Wakes the requests waiting for a slot (each tries again, or sees the server stopped). */
  wakeWaiting(): void {
    for (const resolve of this.waiting.splice(0)) resolve()
  }

  /** Every open session, without touching the use order. */
  values(): IterableIterator<Session> {
    return this.sessions.values()
  }

  /** Marks `id` as being opened by a load or resume; false while another one opens it. `loaded(id)` ends the mark. */
  startLoad(id: string): boolean {
    if (this.loading.has(id)) return false
    let end!: () => void
    const ended = new Promise<void>((resolve) => { end = resolve })
    this.loading.set(id, { ended, end })
    return true
  }

  loaded(id: string): void {
    this.loading.get(id)?.end()
    this.loading.delete(id)
  }

  /**
   * Takes session `id` out of the table for a close. A close that arrives while a load or resume opens `id` was sent
   * after it (requests are handled in stream order): it waits for that load to end and takes what it opened, so the
   * load does not open again a session the client closed. Otherwise it takes the session at once (no await).
   */
  async take(id: string): Promise<Session | undefined> {
    const load = this.loading.get(id)
    if (load) await load.ended
    const session = this.sessions.get(id)
    this.sessions.delete(id)
    return session
  }

  add(session: Session): void {
    this.sessions.set(session.id, session)
  }

  delete(id: string): void {
    this.sessions.delete(id)
  }

  /** Every session, emptied out of the table. */
  drain(): Session[] {
    const all = [...this.sessions.values()]
    this.sessions.clear()
    return all
  }
}

/** Ends a session: its agent disposed and the MCP servers its client sent stopped (stdio processes reaped). */
export async function endSession(session: Session): Promise<void> {
  await Promise.allSettled([session.agent.dispose(), session.mcp?.close()])
}
