// Capability handles: the one object through which a holder posts to, wakes, interrupts and closes an
// agent. An id string names an agent; it grants nothing (nothing maps an id back to an agent or a handle).
import { durationProblem, KeptWith } from '@cordis-subagents/shared'
import { Agent } from './agent.js'
import { AgentError } from './errors.js'
import type { InboxMessage } from './inbox.js'
import type { RunOptions, RunResult } from './types.js'

/** How long `close` waits for each agent of the tree to wind down (ms) before it stops waiting (forces). */
export const DEFAULT_SHUTDOWN_MS = 5_000

/** Where the agent is: `closed` once `close` (or `dispose`) ran, and from then on for good. */
export type AgentHandleStatus = 'idle' | 'running' | 'parked' | 'closed'

/** What a handle reports about its agent; after `close` it is the agent's final state, and stays readable. */
export interface AgentHandleState {
  /** The agent's handle id (`Agent.handleId`). */
  id: string
  status: AgentHandleStatus
  /** The result of the last leg that ended (`run`, `wake`, `resume`, `withdraw`). */
  lastResult?: RunResult
  /** Messages in its transcript. */
  transcriptLength: number
  /** Messages waiting in its inbox (0 once closed). */
  unread: number
  /** `close` stopped waiting for it after its `shutdownMs` grace: work it had started (a model call, a tool) was still settling. */
  forced: boolean
}

export interface PostOptions {
  /** The sender's own handle: its id labels the message (provenance). Without it the message is the host's. */
  from?: AgentHandle
}

export interface CloseOptions {
  /** Grace per agent of the tree, leaf first (ms; default `DEFAULT_SHUTDOWN_MS`): past it `close` stops waiting for that agent. */
  shutdownMs?: number
}

/** Only this file makes handles: `AgentHandle.of(agent)`; a constructor call from elsewhere is refused. */
const MINT = Symbol('AgentHandle')
const handles = new KeptWith<AgentHandle>('agent handle')

/**
 * The capability to reach one agent. Whoever holds the `Agent` (its creator: the host, or the service
 * run that started it as a child) gets its handle with `AgentHandle.of(agent)` and may pass the handle on
 * (a team's board holds its members' handles); an id string, or an object that only looks like a
 * handle, reaches nothing.
 */
export class AgentHandle {
  readonly #agent: Agent
  #forced = false
  #closing?: Promise<AgentHandleState>

  constructor(mint: symbol, agent: Agent) {
    if (mint !== MINT || !(agent instanceof Agent)) {
      throw new AgentError('INVALID_OPTIONS', 'An AgentHandle comes from AgentHandle.of(agent), for an agent you hold; it cannot be made from an id.')
    }
    this.#agent = agent
  }

  /** The agent's handle (one per agent). Throws `INVALID_OPTIONS` for anything but an `Agent` of `ctx.agents`. */
  static of(agent: Agent): AgentHandle {
    if (!(agent instanceof Agent)) throw new AgentError('INVALID_OPTIONS', 'AgentHandle.of() takes an Agent created by ctx.agents, not an id or a look-alike.')
    let handle = handles.get(agent)
    if (!handle) handles.set(agent, handle = new AgentHandle(MINT, agent))
    return handle
  }

  /** Whether `value` is a handle this package made (not a look-alike). */
  static is(value: unknown): value is AgentHandle {
    return typeof value === 'object' && value !== null && #agent in value
  }

  get id(): string {
    return this.#agent.handleId
  }

  /** Handles of the agent's children that are not closed yet, oldest first. */
  get children(): AgentHandle[] {
    return this.#agent.children.map((child) => AgentHandle.of(child))
  }

  /**
   * Queues `message` in the agent's inbox, labelled with its sender (`options.from`, else the host). Throws
   * `INBOX_FULL` (the inbox holds its limit), `DISPOSED` (the agent is closed), `INVALID_PROMPT`, or
   * `INVALID_OPTIONS` for a `from` that is not a handle: nothing is dropped without the sender knowing.
   */
  post(message: string, options: PostOptions = {}): InboxMessage {
    const { from } = options ?? {}
    if (from !== undefined && !AgentHandle.is(from)) {
      throw new AgentError('INVALID_OPTIONS', 'options.from must be the sender\'s AgentHandle (AgentHandle.of(sender)), not an id.')
    }
    return this.#agent.inbox.post(message, undefined, from ? from.id : undefined)
  }

  /** Runs a turn on what waits in the inbox, read as one block with each item labelled by its sender (`Agent.wake`). */
  wake(options?: RunOptions): Promise<RunResult> {
    return this.#agent.wake(options)
  }

  /** Interrupts the running turn: the messages its step had read go back to the inbox, in order (`Agent.interrupt`). */
  interrupt(reason?: unknown): void {
    this.#agent.interrupt(reason)
  }

  /** Where the agent is, its last result and its transcript's length; readable after `close`. */
  get state(): AgentHandleState {
    const agent = this.#agent
    const status: AgentHandleStatus = agent.disposed ? 'closed' : agent.running ? 'running' : agent.parked ? 'parked' : 'idle'
    const state: AgentHandleState = {
      id: agent.handleId, status, transcriptLength: agent.transcript.length, unread: agent.usedInbox?.size ?? 0, forced: this.#forced,
    }
    if (agent.lastResult) state.lastResult = agent.lastResult
    return state
  }

  /**
   * Closes the agent and its whole subtree, leaf first: each agent's children are closed before it, each
   * agent gets `shutdownMs` to wind down (its turn is aborted, its inbox and parked question closed)
   * before `close` stops waiting for it (`state.forced`; its stray work settles on its own). Resolves with
   * the final state. Idempotent: a second call gets the first one's promise.
   */
  close(options: CloseOptions = {}): Promise<AgentHandleState> {
    const shutdownMs = options?.shutdownMs ?? DEFAULT_SHUTDOWN_MS
    // A grace past Node's longest timer would end after 1 ms: refused like a config duration.
    const problem = durationProblem('options.shutdownMs', shutdownMs)
    if (problem) throw new AgentError('INVALID_OPTIONS', problem)
    return this.#closing ??= this.closeTree(shutdownMs)
  }

  private async closeTree(shutdownMs: number): Promise<AgentHandleState> {
    const agent = this.#agent
    await Promise.all(this.children.map((child) => child.close({ shutdownMs })))
    let timer: ReturnType<typeof setTimeout> | undefined
    const graceOver = new Promise<true>((resolve) => timer = setTimeout(resolve, shutdownMs, true))
    try {
      this.#forced = await Promise.race([agent.dispose().then(() => false), graceOver])
    } finally {
      // Also when dispose rejects: the grace timer must not outlive the close.
      clearTimeout(timer)
    }
    // A child its turn created while the children above were closing.
    await Promise.all(this.children.map((child) => child.close({ shutdownMs })))
    return this.state
  }
}
