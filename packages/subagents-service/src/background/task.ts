import type { Agent, InboxDelegation } from '@cordis-subagents/agent'
import type { SubagentHandle } from '../types.js'

/** What a parent's turn does when it would end while its background children run. */
export type TurnEndPolicy = 'wait' | 'end'

/** The message an ended task's result becomes when no wait collects it: its text, and the usage and work it carries. */
export interface BackgroundMessage extends InboxDelegation {
  text: string
}

/** A background delegation to record. */
export interface BackgroundStart {
  parent: Agent
  label: string
  provider: string
  /** `wait`: the parent's turn does not end before this result is delivered (an inbox hold). `end`: it may. */
  onTurnEnd: TurnEndPolicy
  /** The signal of the turn that starts it: its abort cancels the delegation while that turn runs. */
  turnSignal: AbortSignal
}

/** Where a result went: exactly one of these, once. */
export type Delivery =
  | { via: 'wait' }
  | { via: 'message' }
  /** `unread`: its message was posted, but the parent was disposed before reading it. */
  | { via: 'lost'; reason: string; unread?: true }

export type BackgroundState = 'starting' | 'running' | 'ended'

/**
 * One background delegation of a parent: its state, its cancel, and where its result went. The
 * result (`R`) is the starter's own, kept as given; so is the message it becomes when no wait
 * collects it. The book never calls back into the starter.
 */
export class BackgroundTask<R = unknown> {
  state: BackgroundState = 'starting'
  readonly startedAt = Date.now()
  endedAt?: number
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
    return (this.endedAt ?? Date.now()) - this.startedAt
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

/** A wait call's claim on tasks: whichever of them end first are its to deliver. */
export class Waiter {
  readonly collected: BackgroundTask[] = []
  private finish!: (how: 'done' | 'timeout' | 'abort') => void
  readonly done = new Promise<'done' | 'timeout' | 'abort'>((resolve) => this.finish = resolve)

  constructor(readonly tasks: BackgroundTask[], readonly mode: 'any' | 'all') {}

  take(task: BackgroundTask): void {
    this.collected.push(task)
    if (this.mode === 'any' || this.collected.length === this.tasks.length) this.finish('done')
  }

  end(how: 'timeout' | 'abort'): void {
    this.finish(how)
  }
}


function deferredVoid(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>((done) => resolve = done)
  return { promise, resolve }
}

