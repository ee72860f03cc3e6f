import type { Agent } from '@cordis-subagents/agent'
import { describeError, type Usage, type WorkCounts } from '@cordis-subagents/shared'
import type { SubagentHandle, SubagentUpdate } from './types.js'

/** Longest progress line kept per delegation (characters). */
const MAX_PROGRESS_LENGTH = 200

/** What a parent's turn does when it would end while its background children run. */
export type TurnEndPolicy = 'wait' | 'end'

/** A background delegation's result, in the delegating tool's result format. */
export interface BackgroundResult {
  content: string
  isError?: boolean
  metadata?: Record<string, unknown>
  usage?: Usage
  work?: WorkCounts
}

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

/** One background delegation of a parent, as the parent's verbs see it. */
export class BackgroundTask {
  state: BackgroundState = 'starting'
  readonly startedAt = Date.now()
  endedAt?: number
  steps = 0
  lastProgress?: string
  result?: BackgroundResult
  delivery?: Delivery
  /** @internal what the result's inbox message carries (its identity tells the message apart among unread ones). */
  posted?: object
  /** Why we cancelled it, when we did (shown in its message's header). */
  cancelledBecause?: string
  run?: SubagentHandle
  /** @internal the wait call that claims its result when it ends. */
  waiter?: Waiter
  /** @internal set by the book: settles the task with the delegation's result. */
  settleWith: (result: BackgroundResult) => void = () => {}
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

  /** @internal */
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
   * on at once), `running` settles the task. The delegating code calls it right after `start`.
   */
  follow(stop: (reason: unknown) => void, running: Promise<BackgroundResult>): void {
    this.stopRun = stop
    if (this.cancelReason) stop(this.cancelReason.reason)
    running.then((result) => this.settleWith(result), (error) => this.settleWith({ isError: true, content: `Subagent failed: ${describeError(error)}` }))
  }

  /** Cancels the delegation (idempotent; nothing happens once it ended). */
  cancel(because: string, reason?: unknown): void {
    if (!this.live || this.cancelReason) return
    this.cancelledBecause = because
    this.cancelReason = { reason: reason ?? new Error(because) }
    this.stopRun?.(this.cancelReason.reason)
  }

  /** @internal */
  progress(update: SubagentUpdate): void {
    if (typeof update.step === 'number' && Number.isSafeInteger(update.step)) this.steps = Math.max(this.steps, update.step)
    else if (update.kind === 'step') this.steps++
    let line = typeof update.text === 'string' ? update.text.trim().split('\n', 1)[0] : ''
    if (!line && update.kind === 'tool-call' && typeof update.tool === 'string') line = `calls ${update.tool}`
    if (!line && update.kind === 'tool-result' && update.isError && typeof update.tool === 'string') line = `${update.tool} failed`
    if (line) this.lastProgress = line.length > MAX_PROGRESS_LENGTH ? `${line.slice(0, MAX_PROGRESS_LENGTH - 1)}…` : line
  }
}

export interface WaitReport {
  /** Results this wait claims (delivered by it), in the order they ended. */
  collected: BackgroundTask[]
  /** Asked for, but their results were already delivered (or lost). */
  delivered: BackgroundTask[]
  /** Asked for and still running when the wait returned (or claimed by another wait call). */
  running: BackgroundTask[]
  timedOut: boolean
  aborted: boolean
}

/** A wait call's claim on tasks: whichever of them end first are its to deliver. */
/** @internal */
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


/** The header of a result delivered as a message; it says who the result is from and how it ended. */
export function resultHeader(task: BackgroundTask): string {
  const asks = (task.result?.metadata as { stopReason?: unknown } | undefined)?.stopReason === 'pending'
  const ended = task.cancelledBecause ? `was cancelled (${task.cancelledBecause})`
    : task.result?.isError ? 'ended with an error' : asks ? 'asks a question' : 'finished'
  return `[Background subagent ${task.handle} ${JSON.stringify(task.label)} ${ended}]`
}

