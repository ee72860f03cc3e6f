import type { Agent, Budget } from '@cordis-subagents/agent'
import { describeError, limitStop, onAbort, type PendingQuestion } from '@cordis-subagents/shared'
import { capDiagnostic } from '../diagnostic.js'
import { SubagentError } from '../errors.js'
import {
  asLimitStop, chargeReported, chargeUsage, isEmptyUsage, isIdleStop, isRun, normalise, passOn, promiseOf, reasonText, runInfoOf, sealed,
} from './provider-io.js'
import { Parking, type ParkedRunPort } from './parking.js'
import { endIdle } from './park-expiry.js'
import { aborted, discard, startFailed, startRefusal } from './start-failure.js'
import { sendFollowUp } from './steer.js'
import type { Admission, RunHost, SideRoad } from './run-host.js'
import type {
  SubagentHandle, SubagentOutcome, SubagentProvider, SubagentRequest, SubagentResult, SubagentRun, SubagentRunInfo,
  SubagentRunState, SubagentStart, SubagentUpdate,
} from '../types.js'

/**
 * - `starting`: the provider's `start` is pending; updates are buffered until the hand-over.
 * - `live`: handed over; updates are emitted as they come.
 * - `rejected`: the start rejected (nothing was handed over); the run is inert.
 * - `ended`: the result settled (`subagent/end` was emitted); the run may still await `dispose`.
 */
type Phase = 'starting' | 'live' | 'rejected' | 'ended'

/**
 * The run: one object from its admission ticket to dispose, and the one every holder gets. It is
 * made once admission let the start through (`begin` returns it as the `SubagentStart` when the
 * slots were free, else a `PendingStart` that makes it once they are), its `handle` fulfils with it
 * (as the `SubagentHandle`) at the hand-over, and the tool, the background book and the events all
 * see this same object and its `info`. It calls the provider, hands over (or rejects with nothing
 * left running), forwards updates, settles the result once, and disposes once: the once-only
 * guards live here and nowhere else above the provider.
 *
 * Its controller is the run's one abort path: the caller's signal (one shared waiter per signal,
 * however many runs it starts), the holder's `cancel` (before or after the hand-over) and
 * `dispose` all abort it, and the provider gets its signal.
 */
export class Delegation implements SubagentHandle, SubagentStart, ParkedRunPort {
  /** The service-minted run id (`info.runId`); a run restored after a restart keeps its stored id. */ readonly id: string
  /** The child's identity as the provider knows it, once handed over. */
  childId?: string
  /** `delegate`'s promise: fulfils with this object at the hand-over, or rejects with nothing left running. */
  readonly handle: Promise<SubagentHandle>
  private phase: Phase = 'starting'
  private cancelled = false
  /** Set when a limit (a timeout, a budget), not a person, cancelled the run. */
  private limit?: { stop: 'timeout' | 'budget'; reason: unknown }
  private readonly controller = new AbortController()
  /** Updates sent before the hand-over (rare: most providers report progress only once running). */
  private pending?: SubagentUpdate[]
  private provider: SubagentProvider
  private budget?: Budget
  private run?: SubagentRun
  private runInfo?: SubagentRunInfo
  private startedAt = 0
  private settle!: (outcome: SubagentOutcome) => void
  /** The first outcome; never rejects. A final one settles after `subagent/end` was emitted; a `pending` one with no end. */
  readonly result = new Promise<SubagentOutcome>((resolve) => this.settle = resolve)
  private disposal?: Promise<void>
  private stopWaitingForCaller: () => void = noop
  /** Set while the provider's `start` is pending: a cancel rejects the start at once. */
  private stopWaitingForStart?: () => void
  /** Where the run is idle after its first outcome, and the verbs that move it on (parking.ts): made on first need. */
  private book?: Parking
  /** The final outcome, recorded, while no parking exists yet to hold it. */
  private delivered?: SubagentOutcome
  /** The task key it was started under (reattach). */
  readonly reattachKey?: string
  /** A new turn of a run that ended (`ctx.subagents.continue`): its record goes from ended to running. */
  readonly continues: boolean
  /**
   * Made from an admission ticket (its id: minted by admission, or kept from the run a restore or a
   * continue takes up), it calls the provider at once. `request` passed admission's checks.
   */
  constructor(
    private readonly request: SubagentRequest, private readonly host: RunHost, private readonly admission: Admission, side?: SideRoad,
  ) {
    this.id = admission.id
    this.provider = admission.provider
    this.continues = side?.continues === true
    if (side?.reattachKey !== undefined) this.reattachKey = side.reattachKey
    admission.run = this
    // Calls back at once when the caller's signal is already aborted: the run starts cancelled.
    this.stopWaitingForCaller = onAbort(request.signal, this.onCallerAbort)
    this.handle = this.callProvider(side?.choose ? side.choose(admission.provider, this.id) : admission.provider)
  }

  /** The run's info (frozen), from the hand-over on. */
  get info(): SubagentRunInfo {
    return this.runInfo!
  }

  /**
   * The holder's cancel, before or after the hand-over (works detached): a string is a person's
   * reason, an Error the signal's (a `LimitError` ends the run as that limit).
   */
  readonly cancel = (reason?: string | Error): void => {
    if (reason instanceof Error) this.stop(reasonText(reason), reason)
    else this.stop(reason)
  }

  /** Calls the provider; fulfils with the holder's handle (the hand-over) or rejects with nothing left running. */
  private async callProvider(chosen: SubagentProvider | Promise<SubagentProvider>): Promise<SubagentHandle> {
    const { host, request, admission } = this
    const provider = this.provider = chosen instanceof Promise ? await chosen : chosen
    if (this.cancelled) {
      // Cancelled before the provider was called (the caller's signal, a cancel while a reattach looked up its record).
      this.phase = 'rejected'
      this.detachCaller()
      this.refundAndRelease()
      throw aborted('before the provider was called')
    }
    const budget = this.budget = admission.budget
    const providerRequest = passOn(request, {
      prompt: request.prompt, parent: request.parent, signal: this.controller.signal, onUpdate: this.onUpdate,
      wantsUpdates: this.wantsUpdates, runId: this.id, depth: admission.depth, maxDepthCeiling: admission.ceiling,
      onIdleEnd: (result) => endIdle(this, host.log, result),
    })
    if (budget) providerRequest.budget = budget
    if (host.traces.size) host.traces.apply(providerRequest, provider.name, host.log)
    this.startedAt = Date.now()
    const starting = promiseOf(() => provider.start(providerRequest))

    // Only `cancel` aborts the run's signal, so it ends this wait itself: no listener on the signal.
    const outcome = await new Promise<{ run: unknown } | { error: unknown } | null>((resolve) => {
      this.stopWaitingForStart = () => resolve(null)
      starting.then((run) => resolve({ run }), (error) => resolve({ error }))
    })
    this.stopWaitingForStart = undefined

    // Aborted before the hand-over: reject now; clean up whatever the provider still hands us.
    if (!outcome || this.controller.signal.aborted) return this.reject(aborted('before the provider handed the run over'), starting)
    if ('run' in outcome && isRun(outcome.run)) return this.handOver(outcome.run)
    const refusal = startRefusal(provider.name, outcome)!
    return this.reject(refusal.error, refusal.leftover)
  }

  private handOver(run: SubagentRun): SubagentHandle {
    const { provider, request } = this
    this.run = run
    const info: SubagentRunInfo = this.runInfo = runInfoOf(this.id, provider.name, request, run, this.admission.depth, this.startedAt)
    this.childId = info.childId
    this.phase = 'live'
    this.host.live.set(this.id, this)
    this.host.events.emit('subagent/start', info)
    this.host.note('started', this)
    for (const update of this.pending ?? []) this.host.events.emit('subagent/update', info, update)
    this.pending = undefined
    this.follow(() => run.result, 'failed the run')
    return this
  }

  /** For the parking (`ParkedRunPort`): hands what `call` settles with to `arrive`; a throw or rejection becomes an `error` result. */
  follow(call: () => unknown, failed: string): void {
    promiseOf(call).then((raw) => this.arrive(raw), (error) => this.arrive({
      stopReason: 'error',
      output: '',
      diagnostic: capDiagnostic(`Subagent provider "${this.provider.name}" ${failed}: ${describeError(error)}`),
    }))
  }

  /** Passes a follow-up message to the provider's run, refusing what it cannot take with a code. */
  send(message: string): void {
    // An interrupted run takes messages for its next wake; a parked one waits for an answer instead.
    sendFollowUp(this.run, this.provider?.name, this.id, this.open && this.book?.state !== 'parked', message)
  }

  private get parking(): Parking {
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
  /** The provider run's checkpoint (JSON), or undefined when it has none or fails. */
  checkpoint(): unknown { return this.parking.checkpoint() }
  /** The idle side (host verbs act through it); the final outcome; whether the start failed (nothing handed over). */
  get verbs(): Parking { return this.parking }
  get ended(): Promise<SubagentOutcome> { return this.parking.final }
  get rejected(): boolean { return this.phase === 'rejected' }
  /** For the parking: the provider's name and run, and whether the run is handed over, not ended, not cancelled. */
  get providerName(): string { return this.provider?.name }
  get providerRun(): SubagentRun | undefined { return this.run }
  /** The agent that delegated it. */ get parent(): Agent { return this.request.parent }
  get open(): boolean { return this.phase === 'live' && !this.cancelled }

  /** A provider result: parks the run on `pending` / `interrupted`, settles it on any other. */
  private arrive(raw: unknown): void {
    if (this.phase === 'ended') return
    const result = normalise(this.provider.name, raw)
    if (!isIdleStop(result.stopReason)) return this.finish(result)
    // A cancelled run does not park: it ends (the cancel is why).
    if (this.cancelled) return this.finish({ stopReason: 'aborted', output: result.output, diagnostic: 'The run was cancelled.' })
    const parked = this.parking.park(this.seal(result))
    this.host.afterRecorded(this.id, () => this.settle(parked))
  }

  /** Aborts the provider's signal and, after the hand-over, calls the run's `cancel` once. */
  private stop(reason?: string, signalReason?: unknown): void {
    if (this.cancelled || this.phase === 'ended' || this.phase === 'rejected') return
    const idle = this.run && this.state !== 'running'
    this.cancelled = true
    const stop = limitStop(signalReason)
    if (stop) this.limit = { stop, reason: signalReason }
    this.controller.abort(signalReason ?? new SubagentError('ABORTED', reason ?? 'The run was cancelled.'))
    this.stopWaitingForStart?.()
    if (!this.run) return
    try {
      this.run.cancel(reason)
    } catch (error) {
      this.host.log.warn('provider %s: cancel() of run %s threw: %s', this.provider.name, this.id, describeError(error))
    }
    // An idle run has no turn whose end would settle it: it ends here.
    if (idle) this.finish(this.parking.cancelled(reason))
  }

  /**
   * Idempotent: cancels a run still going, awaits the provider's dispose, settles a result it left
   * pending. Before the hand-over it cancels the start (which then rejects `ABORTED`).
   */
  readonly dispose = (): Promise<void> => {
    if (!this.run) {
      this.stop('The run was disposed.')
      return Promise.resolve()
    }
    return this.disposal ??= this.disposeOnce(this.run)
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
    if (this.phase !== 'ended') {
      // Give a result that settles right after dispose a chance, then settle it ourselves.
      await new Promise<void>((resolve) => setImmediate(resolve))
      this.finish({
        stopReason: this.cancelled ? 'aborted' : 'error',
        output: '',
        diagnostic: `Subagent provider "${this.provider.name}" disposed the run without settling its result.`,
      })
    }
    if (this.host.live.get(this.id) === this) this.host.live.delete(this.id) // a continue may hold the id by now
    this.release()
    if (failure !== undefined) {
      throw new SubagentError('DISPOSE_FAILED',
        capDiagnostic(`Subagent provider "${this.provider.name}" failed to dispose run ${this.id}: ${describeError(failure)}`),
        { cause: failure })
    }
  }

  private finish(raw: SubagentResult): void {
    if (this.phase === 'ended') return
    this.phase = 'ended'
    // Nothing left to cancel: let go of the caller's signal now rather than at dispose.
    this.detachCaller()
    const outcome = this.seal(this.limit ? asLimitStop(raw, this.limit.stop, this.limit.reason) : raw)
    this.host.events.emit('subagent/end', this.runInfo!, outcome)
    this.host.note('settled', this, outcome)
    // Holders get the outcome once it is recorded: a stop right after loses nothing (journal.ts).
    this.host.afterRecorded(this.id, () => {
      if (this.book) this.book.deliver(outcome, true)
      else this.delivered = outcome
      // `result` is the first outcome (a later settle does nothing).
      this.settle(outcome)
    })
  }

  /** A result as holders get it: spend charged, `work` and `durationMs` set, frozen. */
  private seal(settled: SubagentResult): SubagentOutcome {
    if (this.budget) chargeReported(this.budget, settled.usage, settled.work)
    return sealed(settled, this.startedAt)
  }

  private readonly onUpdate = (update: SubagentUpdate): void => {
    if (this.phase === 'ended' || this.phase === 'rejected') return
    if (update?.kind === 'usage') {
      if (isEmptyUsage(update)) return
      const stop = this.budget && chargeUsage(this.budget, update)
      if (stop) this.stop(undefined, stop)
    }
    const forward = this.request.onUpdate
    if (forward) {
      try {
        forward(update)
      } catch (error) {
        this.host.log.warn('onUpdate of run %s threw: %s', this.id, describeError(error))
      }
    }
    if (this.phase === 'starting') (this.pending ??= []).push(update)
    else if (this.host.events.has('subagent/update')) this.host.events.emit('subagent/update', this.runInfo!, update)
  }

  private readonly wantsUpdates = (): boolean =>
    this.phase !== 'ended' && this.phase !== 'rejected' && (!!this.request.onUpdate || this.host.events.has('subagent/update'))

  private readonly onCallerAbort = (): void => {
    const reason: unknown = this.request.signal.reason
    this.stop(reasonText(reason), reason)
  }

  private detachCaller(): void {
    this.stopWaitingForCaller()
    this.stopWaitingForCaller = noop
  }

  /** Rejects the start after the provider was called (so `subagent/start-failed` is emitted); `leftover`: what to clean up. */
  private reject(error: SubagentError, leftover?: unknown): never {
    startFailed(this.host.events, this.id, this.provider.name, this.request, error)
    this.phase = 'rejected'
    this.detachCaller()
    const { log } = this.host
    const name = this.provider.name
    if (leftover === undefined) {
      this.refundAndRelease()
    } else if (leftover instanceof Promise) {
      // The start still pending: stop what it hands over late, then free the slot.
      leftover.then((late) => discard(log, name, late), noop).finally(() => this.refundAndRelease())
    } else {
      // A run we will not hand over: stop it, then free its slot.
      discard(log, name, leftover).finally(() => this.refundAndRelease())
    }
    throw error
  }

  private release(): void {
    this.admission.release()
  }

  private refundAndRelease(): void {
    this.admission.refundAndRelease()
  }
}

const noop = () => {}

/** A run handed over and not yet disposed, as the service's host verbs see it. */
export type LiveRun = Delegation
