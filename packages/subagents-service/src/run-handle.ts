import type { Logger } from 'cordis'
import type { Budget } from '@cordis-subagents/agent'
import { capDiagnostic, describeError } from './diagnostic.js'
import { SubagentError } from './errors.js'
import type { SubagentEvents } from './events.js'
import { asLimitStop, checkWork, limitStopOf, normalise, reasonText, tokensOf } from './outcome.js'
import type { Slot } from './tree-gate.js'
import type { TraceSources } from './trace-sources.js'
import { isRun } from './validate.js'
import type {
  ProviderStartRequest, SubagentHandle, SubagentOutcome, SubagentProvider, SubagentRequest, SubagentResult,
  SubagentRun, SubagentRunInfo, SubagentUpdate,
} from './types.js'

/** A start the service admitted: its place in the tree and the slots it holds. */
export interface Admission {
  depth: number
  /** The deepest depth allowed below this parent. */
  ceiling: number
  parentBudget?: Budget
  slot?: Slot
  /** Frees the gate slots (idempotent). */
  release(): void
  /** Gives the parent back the delegation it was charged. */
  refund(): void
}

/** What a run needs of the service that started it. */
export interface RunHost {
  events: SubagentEvents
  log: Logger
  /** Runs handed over and not yet disposed. */
  live: Map<string, SubagentRunInfo>
  /** The tree slot each delegated run holds, keyed by its budget: its own children may borrow it. */
  slots: WeakMap<Budget, Slot>
  /** Where a delegation without a trace context may get one (a tracing plugin). */
  traces: TraceSources
}

/**
 * - `starting`: the provider's `start` is pending; updates are buffered until the hand-over.
 * - `live`: handed over; updates are emitted as they come.
 * - `rejected`: the start rejected (nothing was handed over); the run is inert.
 * - `ended`: the result settled (`subagent/end` was emitted); the run may still await `dispose`.
 */
type Phase = 'starting' | 'live' | 'rejected' | 'ended'

/** Largest follow-up message (`send`), in UTF-16 code units: about 1 MiB of text. */
const MAX_SEND_LENGTH = 1 << 20

/**
 * Run ids only need to be unique among the runs of this process: they key the service's `live`
 * map, events and tool metadata here, and never name anything in another process or on disk
 * (an ACP child gets its own session id). A counter per process is unique there, and far cheaper
 * than a random UUID per run; the start time keeps ids of two processes in one log apart.
 */
const RUN_ID_PREFIX = `run-${Date.now().toString(36)}-`
let runCount = 0

/**
 * One run from the service's side: calls the provider, hands the run over (or rejects with
 * nothing left running), forwards updates, settles the result once, and disposes once.
 */
export class RunHandle {
  readonly runId = RUN_ID_PREFIX + (++runCount).toString(36)
  private phase: Phase = 'starting'
  private cancelled = false
  /** Set when a limit (a timeout, a budget), not a person, cancelled the run. */
  private limit?: { stop: 'timeout' | 'budget'; reason: unknown }
  private readonly controller = new AbortController()
  private readonly pending: SubagentUpdate[] = []
  private readonly budget?: Budget
  private run?: SubagentRun
  private info?: SubagentRunInfo
  private startedAt = 0
  private settle!: (outcome: SubagentOutcome) => void
  private readonly result = new Promise<SubagentOutcome>((resolve) => this.settle = resolve)
  private disposal?: Promise<void>

  constructor(
    private readonly provider: SubagentProvider,
    private readonly request: SubagentRequest,
    private readonly admission: Admission,
    private readonly host: RunHost,
  ) {
    this.budget = admission.parentBudget?.child(request.budget)
    if (this.budget && admission.slot) host.slots.set(this.budget, admission.slot)
    request.signal.addEventListener('abort', this.onCallerAbort, { once: true })
  }

  /** Calls the provider; fulfils with the holder's handle (the hand-over) or rejects with nothing left running. */
  async start(): Promise<SubagentHandle> {
    const { provider, request } = this
    const { budget: _limits, ...rest } = request
    const providerRequest: ProviderStartRequest = {
      ...rest, signal: this.controller.signal, onUpdate: this.onUpdate, runId: this.runId,
      depth: this.admission.depth, maxDepthCeiling: this.admission.ceiling,
      ...this.budget ? { budget: this.budget } : {},
    }
    this.host.traces.apply(providerRequest, provider.name, this.host.log)
    this.startedAt = Date.now()
    let starting: Promise<unknown>
    try {
      starting = Promise.resolve(provider.start(providerRequest))
    } catch (error) {
      starting = Promise.reject(error)
    }

    const outcome = await new Promise<{ run: unknown } | { error: unknown } | null>((resolve) => {
      const signal = this.controller.signal
      const onAbort = () => resolve(null)
      signal.addEventListener('abort', onAbort, { once: true })
      starting.then((run) => resolve({ run }), (error) => resolve({ error }))
        .finally(() => signal.removeEventListener('abort', onAbort))
    })

    if (!outcome || this.controller.signal.aborted) {
      // Aborted before the hand-over: reject now; clean up whatever the provider still hands us.
      this.phase = 'rejected'
      this.detachCaller()
      starting.then((late) => discard(this.host.log, provider.name, late), () => {}).finally(this.refundAndRelease)
      throw aborted('before the provider handed the run over')
    }
    if ('error' in outcome) {
      const { error } = outcome
      if (error instanceof SubagentError) this.reject(error)
      this.reject(new SubagentError('PROVIDER_START_FAILED',
        capDiagnostic(`Subagent provider "${provider.name}" failed to start a child: ${describeError(error)}`),
        { cause: error }))
    }
    const candidate = (outcome as { run: unknown }).run
    if (!isRun(candidate)) {
      this.reject(new SubagentError('PROVIDER_START_FAILED',
        `Subagent provider "${provider.name}" fulfilled start() with something that is not a run (needs result, cancel, dispose).`),
      candidate)
    }
    return this.handOver(candidate as SubagentRun)
  }

  private handOver(run: SubagentRun): SubagentHandle {
    const { provider, request } = this
    this.run = run
    const childId = typeof run.childId === 'string' ? run.childId : undefined
    const origin = typeof run.origin === 'string' && run.origin ? run.origin.slice(0, 32) : undefined
    const info: SubagentRunInfo = this.info = Object.freeze({
      runId: this.runId,
      provider: provider.name,
      ...request.label === undefined ? {} : { label: request.label },
      parentId: request.parent.id,
      ...childId === undefined ? {} : { childId },
      ...origin === undefined ? {} : { origin },
      depth: this.admission.depth,
      startedAt: this.startedAt,
    })
    this.phase = 'live'
    this.host.live.set(this.runId, info)
    this.host.events.emit('subagent/start', info)
    for (const update of this.pending.splice(0)) this.host.events.emit('subagent/update', info, update)

    let providerResult: Promise<unknown>
    try {
      providerResult = Promise.resolve(run.result)
    } catch (error) {
      providerResult = Promise.reject(error)
    }
    providerResult.then(
      (raw) => this.finish(normalise(provider.name, raw)),
      (error) => this.finish({
        stopReason: 'error',
        output: '',
        diagnostic: capDiagnostic(`Subagent provider "${provider.name}" failed the run: ${describeError(error)}`),
      }),
    )

    return Object.freeze({
      id: this.runId,
      ...childId === undefined ? {} : { childId },
      info,
      result: this.result,
      cancel: (reason?: string) => this.cancel(reason),
      dispose: () => this.dispose(),
      send: (message: string) => this.send(message),
    })
  }

  /** Passes a follow-up message to the provider's run, refusing what it cannot take with a code. */
  send(message: string): void {
    if (typeof message !== 'string' || !message.trim()) throw new SubagentError('INVALID_REQUEST', 'send() takes a non-empty message string.')
    if (message.length > MAX_SEND_LENGTH) {
      throw new SubagentError('INVALID_REQUEST', `A follow-up message is at most ${MAX_SEND_LENGTH} characters (got ${message.length}); shorten it.`)
    }
    if (this.phase !== 'live' || this.cancelled) {
      throw new SubagentError('NOT_RUNNING', `Run ${this.runId} has ended; collect its result, then delegate again to continue.`)
    }
    const run = this.run!
    if (typeof run.send !== 'function') {
      throw new SubagentError('STEER_UNSUPPORTED', `Provider "${this.provider.name}" cannot take follow-up messages; wait for the result, then delegate again.`)
    }
    try {
      run.send(message)
    } catch (error) {
      if (error instanceof SubagentError) throw error
      throw new SubagentError('NOT_RUNNING', `Provider "${this.provider.name}" refused the message: ${describeError(error)}`, { cause: error })
    }
  }

  /** Aborts the provider's signal and, after the hand-over, calls the run's `cancel` once. */
  cancel(reason?: string, signalReason?: unknown): void {
    if (this.cancelled || this.phase === 'ended' || this.phase === 'rejected') return
    this.cancelled = true
    const stop = limitStopOf(signalReason)
    if (stop) this.limit = { stop, reason: signalReason }
    this.controller.abort(signalReason ?? new SubagentError('ABORTED', reason ?? 'The run was cancelled.'))
    if (!this.run) return
    try {
      this.run.cancel(reason)
    } catch (error) {
      this.host.log.warn('provider %s: cancel() of run %s threw: %s', this.provider.name, this.runId, describeError(error))
    }
  }

  /** Idempotent: cancels a run still going, awaits the provider's dispose, settles a result it left pending. */
  dispose(): Promise<void> {
    return this.disposal ??= this.disposeOnce()
  }

  private async disposeOnce(): Promise<void> {
    const run = this.run!
    this.detachCaller()
    if (this.phase !== 'ended') this.cancel('The run was disposed.')
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
    this.host.live.delete(this.runId)
    this.release()
    if (failure !== undefined) {
      throw new SubagentError('DISPOSE_FAILED',
        capDiagnostic(`Subagent provider "${this.provider.name}" failed to dispose run ${this.runId}: ${describeError(failure)}`),
        { cause: failure })
    }
  }

  private finish(raw: SubagentResult): void {
    if (this.phase === 'ended') return
    this.phase = 'ended'
    // Nothing left to cancel: let go of the caller's signal now rather than at dispose.
    this.detachCaller()
    const settled: SubagentResult = this.limit ? asLimitStop(raw, this.limit.stop, this.limit.reason) : raw
    const tokens = tokensOf(settled.usage)
    if (this.budget && tokens !== undefined) this.budget.chargeTokensUpTo(tokens)
    const outcome: SubagentOutcome = Object.freeze({
      ...settled, work: settled.work ?? checkWork(undefined), durationMs: Math.max(0, Date.now() - this.startedAt),
    })
    this.host.events.emit('subagent/end', this.info!, outcome)
    this.settle(outcome)
  }

  private readonly onUpdate = (update: SubagentUpdate): void => {
    if (this.phase === 'ended' || this.phase === 'rejected') return
    if (update?.kind === 'usage') {
      const tokens = tokensOf(update.usage)
      if (tokens === undefined) return
      this.budget?.chargeTokensUpTo(tokens)
    }
    const forward = this.request.onUpdate
    if (forward) {
      try {
        forward(update)
      } catch (error) {
        this.host.log.warn('onUpdate of run %s threw: %s', this.runId, describeError(error))
      }
    }
    if (this.phase === 'starting') this.pending.push(update)
    else this.host.events.emit('subagent/update', this.info!, update)
  }

  private readonly onCallerAbort = (): void => {
    const reason: unknown = this.request.signal.reason
    this.cancel(reasonText(reason), reason)
  }

  private detachCaller(): void {
    this.request.signal.removeEventListener('abort', this.onCallerAbort)
  }

  private reject(error: SubagentError, leftover?: unknown): never {
    this.phase = 'rejected'
    this.detachCaller()
    if (leftover === undefined) {
      this.refundAndRelease()
    } else {
      // A run we will not hand over: stop it, then free its slot.
      discard(this.host.log, this.provider.name, leftover).finally(this.refundAndRelease)
    }
    throw error
  }

  private release(): void {
    if (this.budget) this.host.slots.delete(this.budget)
    this.admission.release()
  }

  private readonly refundAndRelease = (): void => {
    this.admission.refund()
    this.release()
  }
}

/** Stops and releases a run that will never be handed over. */
async function discard(log: Logger, providerName: string, run: unknown): Promise<void> {
  if (!run || typeof run !== 'object') return
  const target = run as Partial<SubagentRun>
  try {
    // Nobody will read this result; keep a late rejection from going unhandled.
    Promise.resolve(target.result).catch(() => {})
    if (typeof target.cancel === 'function') target.cancel('The start was abandoned.')
    if (typeof target.dispose === 'function') await target.dispose()
  } catch (error) {
    log.warn('provider %s: cleaning up an abandoned run failed: %s', providerName, describeError(error))
  }
}

export function aborted(when: string): SubagentError {
  return new SubagentError('ABORTED', `The request's signal was aborted ${when}; no child was started.`)
}
