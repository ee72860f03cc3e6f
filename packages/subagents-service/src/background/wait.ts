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

/**
 * Waits for `asked`: `any` returns at the first result, `all` when all ended; at `timeoutMs` or an
 * abort of `signal` it returns what it has. Results it returns in `collected` are delivered by this
 * call; on abort they go to the inbox instead.
 */
export async function waitOn<T extends Waitable>(
  asked: readonly T[], mode: 'any' | 'all', timeoutMs: number, signal: AbortSignal, deliver: WaitDelivery<T>,
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
  const timer = setTimeout(() => waiter.end('timeout'), timeoutMs)
  const onAbort = () => waiter.end('abort')
  signal.addEventListener('abort', onAbort, { once: true })
  const how = await waiter.done
  clearTimeout(timer)
  signal.removeEventListener('abort', onAbort)
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
