import type { Agent } from '@cordis-subagents/agent'
import { type AbortScope, describeError, KeptWith, limitStop, onAbort } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type { SubagentHandle } from '../types.js'
import type { BackgroundMessage, BackgroundStart, BackgroundState, Delivery, TurnEndPolicy } from './shapes.js'
import { waitOn, type Waiter, WaitTimers } from './wait.js'

// The background books: the registry of every parent's book (`ctx.subagents.background`), one
// parent's book, and its tasks (state, cancel, exactly-once delivery). A wait call on tasks is
// wait.ts, entered only when a model waits.

/** Background delegations of one parent that may be live (starting or running) at once. */
export const MAX_LIVE_PER_PARENT = 16
/** Ended delegations one parent's book remembers (for status and "already delivered"); the oldest go first. */
export const MAX_ENDED_PER_PARENT = 64

export interface WaitReport<R = unknown> {
  /** Results this wait claims (delivered by it), in the order they ended. */
  collected: BackgroundTask<R>[]
  /** Asked for, but their results were already delivered (or lost). */
  delivered: BackgroundTask<R>[]
  /** Asked for and still running when the wait returned (or claimed by another wait call). */
  running: BackgroundTask<R>[]
  timedOut: boolean
  aborted: boolean
}

export interface BackgroundLimits {
  /** Live background delegations per parent (default 16). */
  maxLive: number
  /** Ended delegations remembered per parent (default 64). */
  maxEnded: number
}

/**
 * `ctx.subagents.background`: the background delegations of every parent agent (tasks, state,
 * cancel and wait), reachable by whoever starts them and whoever acts on them. What a task's result
 * is and how it reads is the starter's. A parent's book lives as long as the parent agent object (kept with it: `KeptWith`).
 */
export class BackgroundRegistry {
  readonly limits: BackgroundLimits
  /** @internal tasks still running, of every parent. */
  readonly live = new Set<BackgroundTask>()
  /** @internal the timers of wait calls. */
  readonly waitTimers = new WaitTimers()
  private readonly books = new KeptWith<ParentBackground>('background book')
  private stopped = false

  constructor(
    private readonly onLost: (parent: Agent, task: BackgroundTask, reason: string) => void,
    limits: Partial<BackgroundLimits> = {},
  ) {
    this.limits = { maxLive: limits.maxLive ?? MAX_LIVE_PER_PARENT, maxEnded: limits.maxEnded ?? MAX_ENDED_PER_PARENT }
  }

  /** The parent's book (made on first use). */
  of(parent: Agent): ParentBackground {
    return this.books.get(parent) ?? this.books.set(parent, new ParentBackground(parent, this))
  }

  /** The parent's book if it has one. */
  peek(parent: Agent): ParentBackground | undefined {
    return this.books.get(parent)
  }

  /** Starts a background delegation for `start.parent`; `ABORTED` after the service stopped. */
  start<R>(start: BackgroundStart): BackgroundTask<R> {
    if (this.stopped) throw new SubagentError('ABORTED', 'The subagents service has stopped; no background delegation was started.')
    const inbox = (start.parent as Partial<Agent> | undefined)?.inbox
    if (typeof inbox?.post !== 'function' || typeof inbox.hold !== 'function' || typeof inbox.onClose !== 'function') {
      throw new SubagentError('INVALID_REQUEST', 'A background delegation needs a parent agent with an inbox (an Agent of @cordis-subagents/agent); delegate synchronously for this caller.')
    }
    return this.of(start.parent).start(start)
  }

  /** Cancels every live background delegation (the service stops). */
  stopAll(because = 'the subagents service stopped'): void {
    this.stopped = true
    for (const task of [...this.live]) task.cancel(because)
  }

  /** @internal */
  lost(parent: Agent, task: BackgroundTask, reason: string): void {
    this.onLost(parent, task, reason)
  }
}

/** The background delegations of one parent agent. */
export class ParentBackground {
  private readonly tasks = new Map<string, BackgroundTask>()
  private count = 0
  private closed = false

  constructor(readonly parent: Agent, private readonly registry: BackgroundRegistry) {
    parent.inbox.onClose((unread) => this.close(unread))
  }

  get liveCount(): number {
    let n = 0
    for (const task of this.tasks.values()) if (task.live) n++
    return n
  }

  /** Every task this parent still remembers, oldest first. */
  list(): BackgroundTask[] {
    return [...this.tasks.values()]
  }

  /**
   * Whether `task`'s result ended and this parent's model has not read it: its message still waits in
   * the parent's inbox, or it was lost unread (the parent was disposed first).
   */
  unread(task: BackgroundTask): boolean {
    const { delivery } = task
    if (delivery?.via === 'lost') return delivery.unread === true
    return delivery?.via === 'message' && task.posted !== undefined && !this.parent.disposed && this.parent.inbox.carries(task.posted)
  }

  /**
   * Records a background delegation and returns its task; the caller then starts the run and binds
   * it with `task.follow`. Throws `BACKGROUND_LIMIT` when too many are live (nothing is recorded).
   */
  start<R>(start: BackgroundStart): BackgroundTask<R> {
    const limit = this.registry.limits.maxLive
    // `disposed` too: a book made for an already disposed parent hears of the close only in a microtask.
    if (this.closed || this.parent.disposed) {
      throw new SubagentError('ABORTED', `Agent ${this.parent.id} has been disposed; no background delegation was started.`)
    }
    if (this.liveCount >= limit) {
      throw new SubagentError('BACKGROUND_LIMIT',
        `This agent already has ${limit} background subagents running; wait for one to finish (or cancel one) before starting another.`)
    }
    // The hold first: if it throws, nothing was recorded.
    const release = start.onTurnEnd === 'wait' ? this.parent.inbox.hold() : undefined
    const task = new BackgroundTask<R>(`bg-${++this.count}`, start.label, start.provider, start.onTurnEnd)
    if (release) task.release = release
    // The book keeps every starter's tasks alike; only the starter reads `R` back.
    const kept = task as BackgroundTask
    this.tasks.set(task.handle, kept)
    this.registry.live.add(kept)
    const turn = start.turnSignal
    const onTurnAbort = () => {
      const limit = limitStop(turn.reason)
      task.cancel(limit ? `the turn that started it was stopped by a ${limit} limit` : 'the turn that started it was aborted', turn.reason)
    }
    task.ended = (result, message) => this.settle(kept, result, message)
    // Called at once when the turn is aborted already.
    task.detach = onAbort(turn, onTurnAbort)
    return task
  }

  /** The task under `handle`; `UNKNOWN_HANDLE` (listing this parent's handles) when there is none. */
  get(handle: string): BackgroundTask {
    const task = this.tasks.get(handle)
    if (task) return task
    const known = [...this.tasks.keys()]
    throw new SubagentError('UNKNOWN_HANDLE',
      `No background subagent "${handle}" of this agent. ${known.length ? `Its handles: ${known.join(', ')}.` : 'It has started none (that it still remembers).'}`)
  }

  /**
   * Waits for `handles` (every live one when omitted): `any` returns at the first result, `all`
   * when all ended; at `timeoutMs` or an abort of `signal` (a signal, or a tool call's `exec.abortScope`) it returns what it
   * has (wait.ts). Results it returns in `collected` are delivered by this call; on abort they go to the inbox instead.
   */
  wait(handles: readonly string[] | undefined, mode: 'any' | 'all', timeoutMs: number, signal: AbortSignal | AbortScope): Promise<WaitReport> {
    const asked = handles ? [...new Set(handles)].map((handle) => this.get(handle)) : this.list().filter((task) => task.live)
    return waitOn(asked, mode, timeoutMs, signal, {
      byWait: (task) => this.delivered(task, { via: 'wait' }),
      asMessage: (task) => this.deliverAsMessage(task),
    }, this.registry.waitTimers.deadline)
  }

  /**
   * The parent was disposed: cancels every live task (results that still come are reported lost),
   * and a result whose message was posted but never read is reported lost too.
   */
  private close(unread: readonly { delegation?: object }[]): void {
    this.closed = true
    const carried = new Set(unread.map((message) => message.delegation))
    for (const task of this.tasks.values()) {
      if (task.delivery?.via === 'message' && carried.has(task.posted)) {
        const reason = `its message was posted to ${this.parent.id}, but the agent was disposed before reading it`
        task.delivery = { via: 'lost', reason, unread: true }
        this.registry.lost(this.parent, task, reason)
      }
      task.cancel('its parent agent was disposed')
    }
  }

  /** @internal cancels every live task with `because`. */
  cancelAll(because: string): void {
    for (const task of this.tasks.values()) task.cancel(because)
  }

  private settle(task: BackgroundTask, result: unknown, message: BackgroundMessage): void {
    if (!task.live) return
    task.state = 'ended'
    task.endedAt = Date.now(); task.endedMono = performance.now()
    task.result = result
    task.message = message
    task.detach()
    task.markStarted()
    this.registry.live.delete(task)
    if (task.waiter) task.waiter.take(task)
    else this.deliverAsMessage(task)
  }

  private deliverAsMessage(task: BackgroundTask): void {
    if (this.closed) {
      this.delivered(task, { via: 'lost', reason: `the parent agent ${this.parent.id} was disposed before the result could be delivered` })
      return
    }
    try {
      const { text, usage, work, structured, feed } = task.message!
      // A typed result's value rides with its message (the parent's `message` event carries it), and so does `feed`.
      const carried: Omit<BackgroundMessage, 'text'> = { usage, work }
      if (structured !== undefined) carried.structured = structured
      if (feed) carried.feed = feed
      this.parent.inbox.post(text, carried)
      task.posted = carried
      this.delivered(task, { via: 'message' })
    } catch (error) {
      this.delivered(task, { via: 'lost', reason: `its message could not be posted to ${this.parent.id}: ${describeError(error)}` })
    }
  }

  private delivered(task: BackgroundTask, delivery: Delivery): void {
    if (task.delivery) throw new Error(`background result ${task.handle} delivered twice (${task.delivery.via}, then ${delivery.via})`)
    task.delivery = delivery
    if (delivery.via === 'lost') this.registry.lost(this.parent, task, delivery.reason)
    // After the post: a turn that waits on this hold wakes with the message already there.
    task.release()
    this.forgetOldest()
  }

  private forgetOldest(): void {
    let ended = 0
    for (const task of this.tasks.values()) if (task.delivery) ended++
    for (const [handle, task] of this.tasks) {
      if (ended <= this.registry.limits.maxEnded) break
      if (!task.delivery) continue
      this.tasks.delete(handle)
      ended--
    }
  }
}

/**
 * One background delegation of a parent: its state, its cancel, and where its result went. The
 * result (`R`) is the starter's own, kept as given; so is the message it becomes when no wait
 * collects it. The book never calls back into the starter.
 */
export class BackgroundTask<R = unknown> {
  state: BackgroundState = 'starting'
  /** Epoch ms when it was recorded, and when it ended (shown); `elapsedMs` is measured on the monotonic clock. */
  readonly startedAt = Date.now()
  endedAt?: number
  /** @internal `performance.now()` at the start and the end: a step of the wall clock does not change `elapsedMs`. */
  readonly startedMono = performance.now()
  /** @internal */ endedMono?: number
  /** Progress, as the starter records it from the run's updates. */
  steps = 0
  lastProgress?: string
  result?: R
  delivery?: Delivery
  /** @internal what the result's inbox message carries (its identity tells the message apart among unread ones). */
  posted?: object
  /** Why we cancelled it, when we did (shown in its message's header). */
  cancelledBecause?: string
  run?: SubagentHandle
  /** The wait call that claims its result when it ends (subagent-tool's wait verb reads it). */
  waiter?: Waiter
  /** @internal the inbox message of its result, given with it (posted when no wait collects it). */
  message?: BackgroundMessage
  /** @internal set by the book: ends the task with the delegation's result. */
  ended: (result: unknown, message: BackgroundMessage) => void = () => {}
  /** What stops the delegation (the run's own cancel; no controller of its own), once bound. */
  private stopRun?: (reason: unknown) => void
  /** The first cancel's reason, kept for a delegation bound after it. */
  private cancelReason?: { reason: unknown }
  /** @internal releases the parent's inbox hold (`onTurnEnd: wait`). */
  release: () => void = () => {}
  /** @internal */
  detach: () => void = () => {}
  private readonly startedOrEnded = deferredVoid()

  constructor(readonly handle: string, readonly label: string, readonly provider: string, readonly onTurnEnd: TurnEndPolicy) {}

  get live(): boolean {
    return this.state !== 'ended'
  }

  /** Resolves when the run was handed over (steerable) or the task ended, whichever comes first. */
  started(): Promise<void> {
    return this.startedOrEnded.promise
  }

  /** The starter's: the run was handed over (or the start failed: no run). */
  markStarted(run?: SubagentHandle): void {
    if (run) {
      this.run = run
      if (this.state === 'starting') this.state = 'running'
    }
    this.startedOrEnded.resolve()
  }

  get elapsedMs(): number {
    return Math.round((this.endedMono ?? performance.now()) - this.startedMono)
  }

  /**
   * Binds the delegation that does the work: `stop` cancels it (a cancel that came first is passed
   * on at once). The delegating code calls it right after `start`.
   */
  bind(stop: (reason: unknown) => void): void {
    this.stopRun = stop
    if (this.cancelReason) stop(this.cancelReason.reason)
  }

  /**
   * Ends the task with the delegation's result, and the message it becomes when no wait collects it
   * (worded by the starter, now: a cancel cannot come in between). Once; nothing happens after it ended.
   */
  settle(result: R, message: BackgroundMessage): void {
    this.ended(result, message)
  }

  /** Cancels the delegation (idempotent; nothing happens once it ended). */
  cancel(because: string, reason?: unknown): void {
    if (!this.live || this.cancelReason) return
    this.cancelledBecause = because
    this.cancelReason = { reason: reason ?? new Error(because) }
    this.stopRun?.(this.cancelReason.reason)
  }
}

function deferredVoid(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>((done) => resolve = done)
  return { promise, resolve }
}
