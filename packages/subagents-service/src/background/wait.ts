import { type AbortScope, DeadlineQueue, onAbort } from '@cordis-subagents/shared'

// Off the plain road: a wait call on background tasks (subagent-tool's wait verb), entered only when
// a model waits for its background children. The parent's book (book.ts) hands it the tasks to
// claim and how to deliver what it collects.

/** What a wait needs of a task: whether it is still live, and the wait call that claims it. */
export interface Waitable {
  readonly live: boolean
  waiter?: Waiter
}

/** A wait call's claim on tasks: whichever of them end first are its to deliver. */
export class Waiter<T = unknown> {
  readonly collected: T[] = []
  private finish!: (how: 'done' | 'timeout' | 'abort') => void
  readonly done = new Promise<'done' | 'timeout' | 'abort'>((resolve) => this.finish = resolve)

  constructor(readonly tasks: T[], readonly mode: 'any' | 'all') {}

  take(task: T): void {
    this.collected.push(task)
    if (this.mode === 'any' || this.collected.length === this.tasks.length) this.finish('done')
  }

  end(how: 'timeout' | 'abort'): void {
    this.finish(how)
  }
}

/** What a wait returns (`WaitReport` of book.ts, for the book's tasks). */
export interface WaitOutcome<T> {
  collected: T[]
  delivered: T[]
  running: T[]
  timedOut: boolean
  aborted: boolean
}

/** How the book delivers what a wait collected: by the wait (its caller reads it) or, after an abort, as a message. */
export interface WaitDelivery<T> {
  byWait(task: T): void
  asMessage(task: T): void
}

/** Calls `fire` once `ms` from now unless the returned cancel runs first. */
export type Deadline = (ms: number, fire: () => void) => () => void

/** Most wait durations that get a queue of their own (a model's waits use a few); a wait of yet another gets its own timer. */
const MAX_WAIT_QUEUES = 16

/**
 * The timers of wait calls: one `DeadlineQueue` per duration, so one wait after another makes no timer each. Nothing to close:
 * a wait still pending keeps its deadline (as a timer of its own did), an idle queue's timer is unref'd and fires once at most.
 */
export class WaitTimers {
  private readonly queues = new Map<number, DeadlineQueue>()

  readonly deadline: Deadline = (ms, fire) => {
    let queue = this.queues.get(ms)
    if (!queue) {
      if (this.queues.size >= MAX_WAIT_QUEUES) {
        const timer = setTimeout(fire, ms)
        return () => clearTimeout(timer)
      }
      this.queues.set(ms, queue = new DeadlineQueue(ms))
    }
    return queue.add(fire)
  }
}

/**
 * Waits for `asked`: `any` returns at the first result, `all` when all ended; at `timeoutMs` or an
 * abort of `signal` (a signal or a scope) it returns what it has. Results it returns in `collected` are delivered by this
 * call; on abort they go to the inbox instead.
 */
export async function waitOn<T extends Waitable>(
  asked: readonly T[], mode: 'any' | 'all', timeoutMs: number, signal: AbortSignal | AbortScope, deliver: WaitDelivery<T>, deadline: Deadline,
): Promise<WaitOutcome<T>> {
  const report: WaitOutcome<T> = { collected: [], delivered: [], running: [], timedOut: false, aborted: false }
  const claim: T[] = []
  for (const task of asked) {
    if (!task.live) report.delivered.push(task)
    else if (task.waiter) report.running.push(task)
    else claim.push(task)
  }
  if (!claim.length) return report
  if (signal.aborted) {
    report.aborted = true
    report.running.push(...claim)
    return report
  }
  const waiter = new Waiter<T>(claim, mode)
  for (const task of claim) task.waiter = waiter as Waiter
  const stopTimer = deadline(timeoutMs, () => waiter.end('timeout'))
  const stopWaiting = onAbort(signal, () => waiter.end('abort'))
  const how = await waiter.done
  stopTimer()
  stopWaiting()
  for (const task of claim) if (task.waiter === waiter) task.waiter = undefined
  if (how === 'abort') {
    // Nobody will read this call's result: what it gathered goes to the inbox, once.
    for (const task of waiter.collected) deliver.asMessage(task)
    report.aborted = true
    report.running.push(...claim.filter((task) => task.live))
    return report
  }
  for (const task of waiter.collected) deliver.byWait(task)
  report.collected = waiter.collected
  report.timedOut = how === 'timeout'
  report.running.push(...claim.filter((task) => task.live))
  return report
}
