import type { Agent, Usage, WorkCounts } from '@cordis-subagents/agent'
import { describeError } from './diagnostic.js'
import { SubagentError } from './errors.js'
import { limitStopOf } from './outcome.js'
import type { SubagentHandle, SubagentUpdate } from './types.js'

/** Background delegations of one parent that may be live (starting or running) at once. */
export const MAX_LIVE_PER_PARENT = 16
/** Ended delegations one parent's book remembers (for status and "already delivered"); the oldest go first. */
export const MAX_ENDED_PER_PARENT = 64
/**
 * Longest inbox message (the agent's `MAX_INBOX_MESSAGE_LENGTH`; restated because this package
 * imports only types from the agent package; test/background.spec.ts checks they agree).
 */
export const MAX_MESSAGE_LENGTH = 1 << 20
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

/** What the code that runs a background delegation gets from the registry. */
export interface BackgroundJob {
  /** The delegation's own signal (not a turn's): a cancel, the starting turn's abort, the parent's dispose or a stop aborts it. */
  signal: AbortSignal
  /** Progress of the child (keeps the status' steps and last line). */
  onUpdate(update: SubagentUpdate): void
  /** The service handed the run over (from now on `send` reaches it). */
  onStarted(run: SubagentHandle): void
}

export interface BackgroundStart {
  parent: Agent
  label: string
  provider: string
  /** `wait`: the parent's turn does not end before this result is delivered (an inbox hold). `end`: it may. */
  onTurnEnd: TurnEndPolicy
  /** The signal of the turn that starts it: its abort cancels the delegation while that turn runs. */
  turnSignal: AbortSignal
  /** Runs the delegation; never rejects (a rejection becomes an error result). */
  execute(job: BackgroundJob): Promise<BackgroundResult>
}

/** Where a result went: exactly one of these, once. */
export type Delivery =
  | { via: 'wait' }
  | { via: 'message' }
  | { via: 'lost'; reason: string }

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
  /** Why we cancelled it, when we did (shown in its message's header). */
  cancelledBecause?: string
  run?: SubagentHandle
  /** @internal the wait call that claims its result when it ends. */
  waiter?: Waiter
  /** @internal */
  readonly controller = new AbortController()
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

  /** Aborts the delegation (idempotent; nothing happens once it ended). */
  cancel(because: string, reason?: unknown): void {
    if (!this.live || this.controller.signal.aborted) return
    this.cancelledBecause = because
    this.controller.abort(reason ?? new Error(because))
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
class Waiter {
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

/** The background delegations of one parent agent. */
export class ParentBackground {
  private readonly tasks = new Map<string, BackgroundTask>()
  private count = 0
  private closed = false

  constructor(readonly parent: Agent, private readonly registry: BackgroundRegistry) {
    parent.inbox.onClose(() => this.close())
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

  /** Starts a delegation in the background; throws `BACKGROUND_LIMIT` when too many are live. */
  start(start: BackgroundStart): BackgroundTask {
    const limit = this.registry.limits.maxLive
    if (this.closed) throw new SubagentError('ABORTED', `Agent ${this.parent.id} has been disposed; no background delegation was started.`)
    if (this.liveCount >= limit) {
      throw new SubagentError('BACKGROUND_LIMIT',
        `This agent already has ${limit} background subagents running; wait for one to finish (or cancel one) before starting another.`)
    }
    const task = new BackgroundTask(`bg-${++this.count}`, start.label, start.provider, start.onTurnEnd)
    this.tasks.set(task.handle, task)
    this.registry.live.add(task)
    if (start.onTurnEnd === 'wait') task.release = this.parent.inbox.hold()
    const onTurnAbort = () => {
      const limit = limitStopOf(start.turnSignal.reason)
      task.cancel(limit ? `the turn that started it was stopped by a ${limit} limit` : 'the turn that started it was aborted', start.turnSignal.reason)
    }
    start.turnSignal.addEventListener('abort', onTurnAbort, { once: true })
    task.detach = () => start.turnSignal.removeEventListener('abort', onTurnAbort)
    if (start.turnSignal.aborted) onTurnAbort()
    const job: BackgroundJob = {
      signal: task.controller.signal,
      onUpdate: (update) => task.progress(update),
      onStarted: (run) => task.markStarted(run),
    }
    let running: Promise<BackgroundResult>
    try {
      running = Promise.resolve(start.execute(job))
    } catch (error) {
      running = Promise.reject(error)
    }
    running.then(
      (result) => this.settle(task, result),
      (error) => this.settle(task, { isError: true, content: `Subagent failed: ${describeError(error)}` }),
    )
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
   * when all ended; at `timeoutMs` or an abort of `signal` it returns what it has. Results it
   * returns in `collected` are delivered by this call; on abort they go to the inbox instead.
   */
  async wait(handles: readonly string[] | undefined, mode: 'any' | 'all', timeoutMs: number, signal: AbortSignal): Promise<WaitReport> {
    const asked = handles ? [...new Set(handles)].map((handle) => this.get(handle)) : this.list().filter((task) => task.live)
    const report: WaitReport = { collected: [], delivered: [], running: [], timedOut: false, aborted: false }
    const claim: BackgroundTask[] = []
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
    const waiter = new Waiter(claim, mode)
    for (const task of claim) task.waiter = waiter
    const timer = setTimeout(() => waiter.end('timeout'), timeoutMs)
    const onAbort = () => waiter.end('abort')
    signal.addEventListener('abort', onAbort, { once: true })
    const how = await waiter.done
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort)
    for (const task of claim) if (task.waiter === waiter) task.waiter = undefined
    if (how === 'abort') {
      // Nobody will read this call's result: what it gathered goes to the inbox, once.
      for (const task of waiter.collected) this.deliverAsMessage(task)
      report.aborted = true
      report.running.push(...claim.filter((task) => task.live))
      return report
    }
    for (const task of waiter.collected) this.delivered(task, { via: 'wait' })
    report.collected = waiter.collected
    report.timedOut = how === 'timeout'
    report.running.push(...claim.filter((task) => task.live))
    return report
  }

  /** Cancels every live task (the parent was disposed): results that still come are reported lost. */
  private close(): void {
    this.closed = true
    for (const task of this.tasks.values()) task.cancel('its parent agent was disposed')
  }

  /** @internal cancels every live task with `because`. */
  cancelAll(because: string): void {
    for (const task of this.tasks.values()) task.cancel(because)
  }

  private settle(task: BackgroundTask, result: BackgroundResult): void {
    if (!task.live) return
    task.state = 'ended'
    task.endedAt = Date.now()
    task.result = result
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
    const result = task.result!
    try {
      this.parent.inbox.post(messageText(task), { usage: result.usage, work: result.work })
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

function deferredVoid(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>((done) => resolve = done)
  return { promise, resolve }
}

/** The header of a result delivered as a message; it says who the result is from and how it ended. */
export function resultHeader(task: BackgroundTask): string {
  const ended = task.cancelledBecause ? `was cancelled (${task.cancelledBecause})` : task.result?.isError ? 'ended with an error' : 'finished'
  return `[Background subagent ${task.handle} ${JSON.stringify(task.label)} ${ended}]`
}

function messageText(task: BackgroundTask): string {
  const header = resultHeader(task)
  const body = task.result!.content
  const room = MAX_MESSAGE_LENGTH - header.length - 200
  const text = body.length > room ? `${body.slice(0, room)}\n\n[Result cut to ${room} characters to fit one message.]` : body
  return `${header}\n\n${text}`
}

export interface BackgroundLimits {
  /** Live background delegations per parent (default 16). */
  maxLive: number
  /** Ended delegations remembered per parent (default 64). */
  maxEnded: number
}

/**
 * `ctx.subagents.background`: the background delegations of every parent agent, reachable by the
 * tool load that starts them and by the plugin that gives the model its verbs. A parent's book
 * lives as long as the parent agent object (keyed weakly).
 */
export class BackgroundRegistry {
  readonly limits: BackgroundLimits
  /** @internal tasks still running, of every parent. */
  readonly live = new Set<BackgroundTask>()
  private readonly books = new WeakMap<Agent, ParentBackground>()
  private verbNames?: Readonly<Record<'wait' | 'status' | 'cancel' | 'send', string>>
  private stopped = false

  constructor(
    private readonly onLost: (parent: Agent, task: BackgroundTask, reason: string) => void,
    limits: Partial<BackgroundLimits> = {},
  ) {
    this.limits = { maxLive: limits.maxLive ?? MAX_LIVE_PER_PARENT, maxEnded: limits.maxEnded ?? MAX_ENDED_PER_PARENT }
  }

  /** The parent's book (made on first use). */
  of(parent: Agent): ParentBackground {
    let book = this.books.get(parent)
    if (!book) this.books.set(parent, book = new ParentBackground(parent, this))
    return book
  }

  /** The parent's book if it has one. */
  peek(parent: Agent): ParentBackground | undefined {
    return this.books.get(parent)
  }

  /** Starts a background delegation for `start.parent`; `ABORTED` after the service stopped. */
  start(start: BackgroundStart): BackgroundTask {
    if (this.stopped) throw new SubagentError('ABORTED', 'The subagents service has stopped; no background delegation was started.')
    return this.of(start.parent).start(start)
  }

  /** Names of the verbs a control plugin gives the model, for the start's reply; the returned function withdraws them. */
  useVerbs(names: Readonly<Record<'wait' | 'status' | 'cancel' | 'send', string>>): () => void {
    this.verbNames = names
    return () => { if (this.verbNames === names) this.verbNames = undefined }
  }

  get verbs(): Readonly<Record<'wait' | 'status' | 'cancel' | 'send', string>> | undefined {
    return this.verbNames
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
