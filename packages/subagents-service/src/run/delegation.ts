import type { Agent, Budget } from '@cordis-subagents/agent'
import {
  type BudgetBreach, type BudgetName, checkedUsage, checkedWork, describeError, handleRejection, isCount, isObject, LazyAbort, onAbort,
  headChars, type PendingQuestion, withScopeSignal,
} from '@cordis-subagents/shared'
import { capDiagnostic } from '../diagnostic.js'
import { ANY_STOP, asLimitStop, chargeReported, checkedResult, IDLE_STOPS, isEmptyUsage, overspent, reasonText, watchWall }
  from './limit-stops.js'
import { type Phase, RunControls } from './controls.js'
import { Parking, type ParkedRunPort } from './parking.js'
import { endIdle } from './park-expiry.js'
import { aborted, startRefusal } from './start-failure.js'
import type { Admission, RunHost, SideRoad } from './run-host.js'
import type {
  IncompleteLimit, ProviderStartRequest, SubagentHandle, SubagentOutcome, SubagentProvider, SubagentRequest, SubagentResult, SubagentRun,
  SubagentRunInfo, SubagentRunState, SubagentStart, SubagentStatus, SubagentStatusOf, SubagentStopReason, SubagentUpdate,
} from '../types.js'

/**
 * The run, one object from its admission ticket to dispose, the one every holder gets, and its boundary with the
 * provider: what goes to it and what comes back (a result made well-formed and sealed). The once-only guards live
 * here and nowhere else above the provider. Its controller is the run's one abort path (the caller's signal, the
 * holder's `cancel` and `dispose`); the provider gets its signal.
 */
export class Delegation extends RunControls implements SubagentHandle, SubagentStart, ParkedRunPort {
  /** Minted by admission; a run restored after a restart keeps its stored id. */ readonly id: string
  childId?: string
  readonly handle: Promise<SubagentHandle>
  // Fields, not getters: the service's books read them on every run's start and end.
  readonly parent: Agent
  /** From the hand-over on (frozen). */ info!: SubagentRunInfo
  providerRun?: SubagentRun
  protected phase: Phase = 'starting'
  protected cancelled = false
  protected limit?: { stop: 'timeout' | 'budget'; reason: unknown }
  protected readonly aborter = new LazyAbort()
  protected pending?: SubagentUpdate[]
  protected provider: SubagentProvider
  protected budget?: Budget
  private startedAt = 0; private startedMono = 0
  private settle!: (outcome: SubagentOutcome) => void
  /** The first outcome; never rejects. A final one settles after `subagent/end` was emitted; a `pending` one with no end. */
  readonly result = new Promise<SubagentOutcome>((resolve) => this.settle = resolve)
  private disposal?: Promise<void>
  private stopWaitingForCaller: () => void = noop
  protected stopWaitingForStart?: () => void
  /** The idle side and its verbs (parking.ts), made on first need; `delivered`: the final outcome until then. */
  protected book?: Parking
  private delivered?: SubagentOutcome
  readonly reattachKey?: string
  /** A new turn of a run that ended (`ctx.subagents.continue`): its record goes from ended to running. */
  readonly continues: boolean

  constructor(
    protected readonly request: SubagentRequest, protected readonly host: RunHost, protected readonly admission: Admission, side?: SideRoad,
  ) {
    super()
    this.id = admission.id
    this.provider = admission.provider
    this.parent = request.parent
    this.continues = side?.continues === true
    if (side?.reattachKey !== undefined) this.reattachKey = side.reattachKey
    admission.run = this
    // The caller's abort (its scope when it gave one: no signal is made); called back at once if it has: the run starts cancelled.
    const caller = request.abortScope ?? request.signal
    this.stopWaitingForCaller = onAbort(caller, () => this.stop(reasonText(caller.reason), caller.reason))
    this.handle = this.callProvider(side?.choose ? side.choose(admission.provider, this.id) : admission.provider)
  }

  /** A string is a person's reason, an Error the signal's (a `LimitError` ends the run as that limit). */
  readonly cancel = (reason?: string | Error): void => reason instanceof Error ? this.stop(reasonText(reason), reason) : this.stop(reason)

  /** Fulfils with the holder's handle (the hand-over) or rejects with nothing left running. */
  private async callProvider(chosen: SubagentProvider | Promise<SubagentProvider>): Promise<SubagentHandle> {
    const { host, request, admission } = this
    const provider = this.provider = chosen instanceof Promise ? await chosen : chosen
    if (this.cancelled) {
      // Cancelled before the provider was called (the caller's signal, a cancel while a reattach looked up its record).
      this.phase = 'rejected'
      this.detachCaller()
      admission.refundAndRelease()
      throw aborted('before the provider was called')
    }
    const budget = this.budget = admission.budget
    // The provider gets the run's abort as a scope, and a `signal` made only if it reads one (an in-process child does not).
    const providerRequest = passOn(request, withScopeSignal(new StartRequest(
      request.prompt, request.parent, this.aborter, (update: SubagentUpdate) => this.update(update), this.wantsUpdates, this.id,
      admission.depth, admission.ceiling, (result: SubagentResult) => endIdle(this, host.log, result),
    )) as ProviderStartRequest)
    if (budget) providerRequest.budget = budget
    if (host.traces.size) host.traces.apply(providerRequest, provider.name, host.log)
    this.startedAt = Date.now(); this.startedMono = performance.now()
    const starting = promiseOf(() => provider.start(providerRequest))
    // Only `cancel` aborts the run's signal, so it ends this wait itself: no listener on the signal.
    const outcome = await new Promise<Started | Refused | null>((resolve) => {
      this.stopWaitingForStart = () => resolve(null)
      starting.then((run) => resolve(new Started(run)), (error) => resolve(new Refused(error)))
    })
    this.stopWaitingForStart = undefined
    // Aborted before the hand-over: reject now; clean up whatever the provider still hands us.
    if (!outcome || this.aborter.aborted) return this.reject(aborted('before the provider handed the run over', true), starting)
    if ('run' in outcome && isRun(outcome.run)) return this.handOver(outcome.run)
    const refusal = startRefusal(provider.name, outcome)
    return this.reject(refusal.error, refusal.leftover)
  }

  private handOver(run: SubagentRun): SubagentHandle {
    this.providerRun = run
    const info = this.info = runInfoOf(this.id, this.provider.name, this.request, run, this.admission.depth, this.startedAt)
    this.childId = info.childId
    this.phase = 'live'
    this.host.live.set(this.id, this)
    this.host.events.emit('subagent/start', info)
    this.host.note('started', this)
    for (const update of this.pending ?? []) this.host.events.emit('subagent/update', info, update)
    this.pending = undefined
    const clearWall = this.budget?.spentInProcess === false ? watchWall(this.budget, (error) => this.stop(undefined, error)) : undefined
    if (clearWall) this.stopWaitingForCaller = ((before) => () => { before(); clearWall() })(this.stopWaitingForCaller)
    this.follow(() => run.result, 'failed the run')
    return this
  }

  /** Hands what `call` settles with to `arrive`; a throw or rejection becomes an `error` result. */
  follow(call: () => unknown, failed: string): void {
    promiseOf(call).then((raw) => this.arrive(raw), (error) => this.arrive({
      stopReason: 'error', output: '', diagnostic: capDiagnostic(`Subagent provider "${this.provider.name}" ${failed}: ${describeError(error)}`),
    }))
  }

  protected get parking(): Parking {
    if (this.book) return this.book
    this.book = new Parking(this, this.host)
    if (this.delivered) this.book.deliver(this.delivered, true)
    return this.book
  }
  get state(): SubagentRunState { return this.phase === 'ended' ? 'ended' : this.book?.state ?? 'running' }
  get question(): PendingQuestion | undefined { return this.book?.question }
  resume(answer: string, questionId?: string): Promise<SubagentOutcome> { return this.parking.resume(answer, questionId) }
  /** Once ended, the final outcome (it reaches the parking only after its record is written: see `finish`). */
  current(): Promise<SubagentOutcome> { return this.phase === 'ended' ? this.parking.final : this.parking.current() }
  checkpoint(): unknown { return this.parking.checkpoint() }
  get verbs(): Parking { return this.parking }
  get ended(): Promise<SubagentOutcome> { return this.parking.final }
  get rejected(): boolean { return this.phase === 'rejected' }
  get providerName(): string { return this.provider?.name }
  /** Handed over, not ended, not cancelled. */
  get open(): boolean { return this.phase === 'live' && !this.cancelled }

  /** A provider result: parks the run on `pending` / `interrupted`, settles it on any other. */
  private arrive(raw: unknown): void {
    if (this.phase === 'ended') return
    const result = normalise(this.provider.name, raw)
    if (!IDLE_STOPS.has(result.stopReason)) return this.finish(result)
    // A cancelled run does not park: it ends (the cancel is why).
    if (this.cancelled) return this.finish({ stopReason: 'aborted', output: result.output, diagnostic: 'The run was cancelled.' })
    const parked = this.parking.park(this.seal(result))
    this.host.afterRecorded(this.id, () => this.settle(parked))
  }

  /** Idempotent: cancels a run still going (or its start), awaits the provider's dispose, settles a result it left pending. */
  readonly dispose = (): Promise<void> => {
    if (this.providerRun) return this.disposal ??= this.disposeOnce(this.providerRun)
    this.stop('The run was disposed.')
    return Promise.resolve()
  }

  private async disposeOnce(run: SubagentRun): Promise<void> {
    this.detachCaller()
    if (this.phase !== 'ended') this.stop('The run was disposed.')
    let failure: unknown
    try {
      await run.dispose()
    } catch (error) {
      failure = error
    }
    if (this.phase !== 'ended') await this.settleUndisposed()
    if (this.host.live.get(this.id) === this) this.host.live.delete(this.id) // a continue may hold the id by now
    // The one place a handed-over run's slots go back.
    this.admission.release()
    if (failure !== undefined) this.disposeFailed(failure)
  }

  protected finish(raw: SubagentResult): void {
    if (this.phase === 'ended') return
    this.phase = 'ended'
    // Nothing left to cancel: let go of the caller's signal now rather than at dispose.
    this.detachCaller()
    const outcome = this.seal(this.limit ? asLimitStop(raw, this.limit.stop, this.limit.reason) : raw)
    this.host.events.emit('subagent/end', this.info, outcome)
    this.host.note('settled', this, outcome)
    // Holders get the outcome once it is recorded: a stop right after loses nothing (journal.ts).
    this.host.afterRecorded(this.id, () => {
      if (this.book) this.book.deliver(outcome, true)
      else this.delivered = outcome
      this.settle(outcome)
    })
  }

  /** A result as holders get it: spend charged, `status`, `work` and `durationMs` set, frozen. */
  private seal(settled: SubagentResult): SubagentOutcome {
    this.charge(settled.usage, settled.work)
    return sealed(settled, this.startedMono)
  }

  private charge(usage: unknown, work: unknown): void {
    if (this.budget && !this.budget.spentInProcess) chargeReported(this.budget, usage, work)
  }

  /** The provider's `onUpdate`. */
  private update(update: SubagentUpdate): void {
    if (this.phase === 'ended' || this.phase === 'rejected') return
    if (update?.kind === 'usage') {
      if (isEmptyUsage(update)) return
      this.charge(update.usage, update.work)
      const stop = this.budget && overspent(this.budget)
      if (stop) this.stop(undefined, stop)
    }
    const forward = this.request.onUpdate
    try {
      const returned: unknown = forward?.(update)
      if (returned) handleRejection(returned, (error) => this.host.log.warn('onUpdate of run %s rejected: %s', this.id, describeError(error)))
    } catch (error) {
      this.host.log.warn('onUpdate of run %s threw: %s', this.id, describeError(error))
    }
    if (this.phase === 'starting') (this.pending ??= []).push(update)
    else if (this.host.events.has('subagent/update')) this.host.events.emit('subagent/update', this.info, update)
  }

  private readonly wantsUpdates = (): boolean =>
    this.phase !== 'ended' && this.phase !== 'rejected' && (!!this.request.onUpdate || this.host.events.has('subagent/update'))

  protected detachCaller(): void {
    this.stopWaitingForCaller()
    this.stopWaitingForCaller = noop
  }
}

export type LiveRun = Delegation

/** The host's journal hooks without a journal (no durable store loaded): a note goes nowhere, a record is written at once. */
export const noop = () => {}
export const now = (_runId: string, then: () => void) => then()

/** The status of a result from its stop reason (and, for a budget, the breach that names the limit): see the README's table. */
export function statusOf(result: { stopReason: SubagentStopReason | string; budget?: { budget: BudgetName } }): SubagentStatusOf {
  switch (result.stopReason) {
    case 'completed': return SHARED.done
    case 'pending': return SHARED.pending
    case 'max-steps': return SHARED.maxSteps
    case 'max-tokens': return SHARED.maxTokens
    case 'budget': return result.budget ? { status: 'incomplete', limit: result.budget.budget } : SHARED.incomplete
    case 'interrupted': return SHARED.interrupted
    case 'closed':
    case 'aborted': return SHARED.closed
    case 'timeout': return SHARED.timeout
    default: return SHARED.error
  }
}

// Frozen and shared: every delegation's outcome reads its status here, building nothing.
const status = (value: SubagentStatus, limit?: IncompleteLimit): SubagentStatusOf =>
  Object.freeze(limit ? { status: value, limit } : { status: value })
const SHARED = {
  done: status('done'), pending: status('pending'), incomplete: status('incomplete'), interrupted: status('interrupted'),
  closed: status('closed'), timeout: status('timeout'), error: status('error'),
  maxSteps: status('incomplete', 'maxSteps'), maxTokens: status('incomplete', 'maxTokens'),
}

/** Turns whatever the provider's result fulfilled with into a well-formed result (an odd one through `checkedResult`). */
function normalise(providerName: string, raw: unknown): SubagentResult {
  if (!isObject(raw)) return checkedResult(providerName, raw)
  const plain = typeof raw.output === 'string' && ANY_STOP.has(raw.stopReason as string) && raw.stopReason !== 'pending'
    && (raw.diagnostic ?? undefined) === undefined
  const result: SubagentResult = plain ? { stopReason: raw.stopReason as SubagentStopReason, output: raw.output as string }
    : checkedResult(providerName, raw)
  const usage = checkedUsage(raw.usage)
  if (usage) result.usage = usage
  result.work = checkedWork(raw.work)
  if (isObject(raw.budget)) result.budget = raw.budget as unknown as BudgetBreach
  if (result.stopReason === 'max-steps' && isCount(raw.stepLimit)) result.stepLimit = raw.stepLimit
  if (result.stopReason === 'completed' && raw.value !== undefined) result.value = raw.value
  return result
}

/** A settled result as holders get it: `status` (and `limit`), `work` and `durationMs` set, no empty `question`, frozen. */
function sealed(settled: SubagentResult, startedMono: number): SubagentOutcome {
  const outcome: SubagentOutcome = Object.assign({}, settled) as SubagentOutcome
  if (outcome.question === undefined) delete outcome.question
  const { status, limit } = statusOf(settled)
  outcome.status = status
  if (limit !== undefined) outcome.limit = limit
  outcome.work = settled.work ?? checkedWork(undefined)
  outcome.durationMs = Math.max(0, Math.round(performance.now() - startedMono))
  return Object.freeze(outcome)
}

/**
 * The provider's request: `base` plus every other field of the caller's request but its `budget` (the service carves
 * it). A copy loop rather than `{ ...rest, … }`, which V8 runs on a slow path (≈ 0.5–1 µs per start).
 */
function passOn(request: SubagentRequest, base: ProviderStartRequest): ProviderStartRequest {
  const to = base as unknown as Record<string, unknown>
  const from = request as unknown as Record<string, unknown>
  for (const key of Object.keys(from)) if (key !== 'budget' && !(key in to)) to[key] = from[key]
  return base
}

/** What `call` returns, as a promise: a throw becomes a rejection. */
function promiseOf(call: () => unknown): Promise<unknown> {
  try {
    return Promise.resolve(call())
  } catch (error) {
    return Promise.reject(error)
  }
}

/** A run's info at the hand-over (frozen). */
function runInfoOf(runId: string, provider: string, request: SubagentRequest, run: SubagentRun, depth: number, startedAt: number) {
  const childId = typeof run.childId === 'string' ? run.childId : undefined
  const origin = typeof run.origin === 'string' && run.origin ? headChars(run.origin, 32) : undefined
  const fields = new RunInfo(runId, provider, request.parent.id, depth, startedAt)
  if (request.label !== undefined) fields.label = request.label
  if (childId !== undefined) fields.childId = childId
  if (origin !== undefined) fields.origin = origin
  return Object.freeze(fields) as SubagentRunInfo
}

// Class instances, not literals: V8 may make a literal site's objects old from birth (pretenuring), and a dead old one
// keeps the young objects it names alive through every young collection until a full one (bench/README, "What survives").
class RunInfo {
  declare label?: string; declare childId?: string; declare origin?: string
  constructor(public runId: string, public provider: string, public parentId: string, public depth: number, public startedAt: number) {}
}
class Started { constructor(readonly run: unknown) {} }
class Refused { constructor(readonly error: unknown) {} }
class StartRequest {
  constructor(
    readonly prompt: string, readonly parent: Agent, readonly abortScope: LazyAbort, readonly onUpdate: (update: SubagentUpdate) => void,
    readonly wantsUpdates: () => boolean, readonly runId: string, readonly depth: number, readonly maxDepthCeiling: number,
    readonly onIdleEnd: (result: SubagentResult) => void,
  ) {}
}

/** Whether what the provider's `start` fulfilled with is a run (a result promise, `cancel`, `dispose`); a throwing getter is not. */
function isRun(value: unknown): value is SubagentRun {
  try {
    return isObject(value) && isObject(value.result) && typeof value.result.then === 'function'
      && typeof value.cancel === 'function' && typeof value.dispose === 'function'
  } catch { return false }
}
