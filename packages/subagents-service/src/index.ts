import { randomUUID } from 'node:crypto'
import { Context, Logger, Service } from 'cordis'
import { capDiagnostic, describeError } from './diagnostic.js'
import { Config, resolveConfig } from './config.js'
import { SubagentError } from './errors.js'
import { admitChild, budgetOf, depthCeiling } from './limits.js'
import { asLimitStop, checkWork, limitStopOf, normalise, reasonText, tokensOf } from './outcome.js'
import { ParentGates } from './parent-gate.js'
import { type Slot, TreeGates } from './tree-gate.js'
import { checkCapabilities, checkProvider, checkRequest, isObject, isRun } from './validate.js'
import type { Budget } from '@cordis-subagents/agent'
import type {
  ProviderStartRequest, SubagentHandle, SubagentOutcome, SubagentProvider, SubagentRequest, SubagentResult,
  SubagentRun, SubagentRunInfo, SubagentUpdate,
} from './types.js'

export * from './types.js'
export * from './errors.js'
export { STOP_REASONS } from './outcome.js'
export { MAX_DIAGNOSTIC_BYTES, TRUNCATION_MARK, capDiagnostic, describeError } from './diagnostic.js'

declare module 'cordis' {
  interface Context {
    subagents: SubagentService
  }
  interface Events {
    /** A provider was registered. */
    'subagent/provider-added'(provider: SubagentProvider): void
    /** A provider was removed (its plugin was disposed, reloaded or reconfigured). */
    'subagent/provider-removed'(name: string): void
    /** A run was handed over to its holder. */
    'subagent/start'(info: SubagentRunInfo): void
    /** A provider reported progress of a run (between `start` and `end`). */
    'subagent/update'(info: SubagentRunInfo, update: SubagentUpdate): void
    /** A run's result settled. */
    'subagent/end'(info: SubagentRunInfo, result: SubagentOutcome): void
  }
}

export { PROVIDER_NAME_PATTERN } from './validate.js'

export { Config, DEFAULTS } from './config.js'

type EventName =
  | 'subagent/provider-added' | 'subagent/provider-removed'
  | 'subagent/start' | 'subagent/update' | 'subagent/end'

interface State {
  stopped: boolean
}

/**
 * `ctx.subagents`: the registry of subagent providers and the one entry point that starts
 * children through them (validation, per-parent concurrency gate, run wrapper, events).
 */
export class SubagentService extends Service<Config> {
  static Config = Config

  private readonly providers = new Map<string, SubagentProvider>()
  private readonly live = new Map<string, SubagentRunInfo>()
  private readonly parents = new ParentGates()
  private readonly trees = new TreeGates()
  /** The tree slot each delegated run holds, keyed by its budget: its own children may borrow it. */
  private readonly slots = new WeakMap<Budget, Slot>()
  private readonly state: State = { stopped: false }
  private readonly log: Logger
  private readonly hooks: Record<keyof any, { callback: (...args: any[]) => any }[]>

  constructor(ctx: Context, config?: Partial<Config>) {
    super(ctx, 'subagents', true)
    this.config = resolveConfig(config)
    this.log = ctx.logger('subagents')
    this.hooks = ctx.lifecycle._hooks
  }

  protected override stop() {
    this.state.stopped = true
    this.trees.failAll(() => new SubagentError('ABORTED', 'The subagents service stopped while this start was waiting for a slot.'))
    this.parents.failAll(() => new SubagentError('ABORTED', 'The subagents service stopped while this start was waiting for a slot.'))
  }

  /**
   * Registers a provider in the caller's scope: disposing (or reloading) the calling plugin
   * removes it. Throws `INVALID_PROVIDER` or `DUPLICATE_PROVIDER`.
   */
  register(provider: SubagentProvider): () => void {
    checkProvider(provider)
    const name = provider.name
    const dispose = this.ctx.effect(() => {
      if (this.providers.has(name)) {
        throw new SubagentError('DUPLICATE_PROVIDER',
          `A subagent provider named "${name}" is already registered; configure a different name for this one.`)
      }
      this.providers.set(name, provider)
      return () => {
        if (this.providers.get(name) !== provider) return
        this.providers.delete(name)
        this.emit('subagent/provider-removed', name)
      }
    })
    this.emit('subagent/provider-added', provider)
    return dispose
  }

  get(name: string): SubagentProvider | undefined {
    return this.providers.get(name)
  }

  /** Registered providers, in registration order. */
  list(): SubagentProvider[] {
    return [...this.providers.values()]
  }

  /** Runs handed over and not yet disposed. */
  runs(): SubagentRunInfo[] {
    return [...this.live.values()]
  }

  /**
   * Starts a child through provider `name`. Fulfilling is the hand-over: the caller then owns the
   * run and must `dispose()` it. Rejects with a `SubagentError`; nothing is left running then.
   */
  override start(name: string, request: SubagentRequest): Promise<SubagentHandle>
  /**
   * @internal cordis calls `start()` without arguments when the service becomes ready (the
   * `Service` lifecycle hook shares the name); that call does nothing.
   */
  override start(): Promise<void>
  override start(...args: [] | [name: string, request: SubagentRequest]): Promise<SubagentHandle | void> {
    if (args.length === 0) return Promise.resolve()
    return this.startRun(args[0], args[1])
  }

  private async startRun(name: string, request: SubagentRequest): Promise<SubagentHandle> {
    if (this.state.stopped) throw new SubagentError('NO_PROVIDER', 'The subagents service has stopped.')
    let provider = this.lookup(name, '')
    // DESIGN §6 order: what the provider cannot do is reported before what is malformed.
    if (!isObject(request)) throw new SubagentError('INVALID_REQUEST', 'The request must be an object { prompt, parent, signal, ... }.')
    checkCapabilities(provider, request)
    checkRequest(request)
    const depth = request.parent.depth + 1
    const parentBudget = budgetOf(request.parent)
    const ceiling = depthCeiling(this.config.maxDepth, request.maxDepth, parentBudget)
    if (depth > ceiling.max) {
      throw new SubagentError('DEPTH_EXCEEDED',
        `A child of "${request.parent.id}" would have depth ${depth}, more than ${ceiling.source} ${ceiling.max}; answer without delegating further.`,
        { attempted: depth, max: ceiling.max })
    }
    if (request.signal.aborted) throw aborted('before the start')
    if (parentBudget) admitChild(parentBudget, request.parent.id, this.config.maxChildren)
    const refund = () => parentBudget?.charge('children', -1)

    const key: object = request.parent
    const perParent = Math.min(this.config.maxConcurrentPerParent, request.budget?.maxConcurrent ?? Infinity)
    let slot: Slot | undefined
    try {
      await this.parents.acquire(key, perParent, request.signal, () => aborted('while the start was waiting for a slot'))
      if (parentBudget) {
        const root = parentBudget.root
        const limit = Math.min(this.config.maxConcurrent, root.limits.maxConcurrent)
        slot = await this.trees.acquire(root, limit, this.slots.get(parentBudget), request.signal,
          () => aborted('while the start was waiting for a slot')).catch((error) => {
          this.parents.release(key)
          throw error
        })
      }
    } catch (error) {
      refund()
      throw error
    }
    let released = false
    const release = () => {
      if (released) return
      released = true
      if (slot) this.trees.release(parentBudget!.root, slot)
      this.parents.release(key)
    }
    try {
      if (this.state.stopped) throw new SubagentError('NO_PROVIDER', 'The subagents service has stopped.')
      provider = this.lookup(name, ' (it was removed while this start was waiting for a slot)')
      checkCapabilities(provider, request)
      if (request.signal.aborted) throw aborted('while the start was waiting for a slot')
    } catch (error) {
      release()
      refund()
      throw error
    }
    return this.launch(provider, request, { depth, ceiling: ceiling.max, parentBudget, slot, release, refund })
  }

  private lookup(name: string, context: string): SubagentProvider {
    const provider = typeof name === 'string' ? this.providers.get(name) : undefined
    if (provider) return provider
    const names = [...this.providers.keys()]
    throw new SubagentError('NO_PROVIDER',
      `No subagent provider named ${JSON.stringify(name)}${context}. Registered providers: ${names.join(', ') || '(none)'}.`)
  }

  private async launch(provider: SubagentProvider, request: SubagentRequest, admitted: Admission): Promise<SubagentHandle> {
    const { depth, parentBudget, slot } = admitted
    const runId = randomUUID()
    const caller = request.signal
    const controller = new AbortController()
    const forward = request.onUpdate
    const pending: SubagentUpdate[] = []
    const budget = parentBudget?.child(request.budget)
    if (budget && slot) this.slots.set(budget, slot)
    const release = () => {
      if (budget) this.slots.delete(budget)
      admitted.release()
    }
    const refundAndRelease = () => {
      admitted.refund()
      release()
    }
    let run: SubagentRun | undefined
    let info: SubagentRunInfo | undefined
    /** 'starting' until the hand-over; 'rejected' when start rejected; 'ended' once the result settled. */
    let phase: 'starting' | 'live' | 'rejected' | 'ended' = 'starting'
    let cancelled = false
    /** Set when a limit (a timeout, a budget), not a person, cancelled the run. */
    let limit: { stop: 'timeout' | 'budget'; reason: unknown } | undefined

    const cancel = (reason?: string, signalReason?: unknown) => {
      if (cancelled || phase === 'ended' || phase === 'rejected') return
      cancelled = true
      const stop = limitStopOf(signalReason)
      if (stop) limit = { stop, reason: signalReason }
      controller.abort(signalReason ?? new SubagentError('ABORTED', reason ?? 'The run was cancelled.'))
      if (run) {
        try {
          run.cancel(reason)
        } catch (error) {
          this.log.warn('provider %s: cancel() of run %s threw: %s', provider.name, runId, describeError(error))
        }
      }
    }
    const onCallerAbort = () => cancel(reasonText(caller.reason), caller.reason)
    caller.addEventListener('abort', onCallerAbort, { once: true })

    const onUpdate = (update: SubagentUpdate) => {
      if (phase === 'ended' || phase === 'rejected') return
      if (update?.kind === 'usage') {
        const tokens = tokensOf(update.usage)
        if (tokens === undefined) return
        budget?.chargeTokensUpTo(tokens)
      }
      if (forward) {
        try {
          forward(update)
        } catch (error) {
          this.log.warn('onUpdate of run %s threw: %s', runId, describeError(error))
        }
      }
      if (phase === 'starting') pending.push(update)
      else this.emit('subagent/update', info!, update)
    }

    const { budget: _limits, ...rest } = request
    const providerRequest: ProviderStartRequest = {
      ...rest, signal: controller.signal, onUpdate, runId, depth, maxDepthCeiling: admitted.ceiling,
      ...budget ? { budget } : {},
    }
    const startedAt = Date.now()
    let starting: Promise<unknown>
    try {
      starting = Promise.resolve(provider.start(providerRequest))
    } catch (error) {
      starting = Promise.reject(error)
    }

    const outcome = await new Promise<{ run: unknown } | { error: unknown } | null>((resolve) => {
      const signal = controller.signal
      const onAbort = () => resolve(null)
      signal.addEventListener('abort', onAbort, { once: true })
      starting.then((run) => resolve({ run }), (error) => resolve({ error }))
        .finally(() => signal.removeEventListener('abort', onAbort))
    })

    const reject = (error: SubagentError, leftover?: unknown): never => {
      phase = 'rejected'
      caller.removeEventListener('abort', onCallerAbort)
      if (leftover === undefined) {
        refundAndRelease()
      } else {
        // A run we will not hand over: stop it, then free its slot.
        this.discard(provider.name, leftover).finally(refundAndRelease)
      }
      throw error
    }

    if (!outcome || controller.signal.aborted) {
      // Aborted before the hand-over: reject now; clean up whatever the provider still hands us.
      phase = 'rejected'
      caller.removeEventListener('abort', onCallerAbort)
      starting.then((late) => this.discard(provider.name, late), () => {}).finally(refundAndRelease)
      throw aborted('before the provider handed the run over')
    }
    if ('error' in outcome) {
      const { error } = outcome
      if (error instanceof SubagentError) reject(error)
      reject(new SubagentError('PROVIDER_START_FAILED',
        capDiagnostic(`Subagent provider "${provider.name}" failed to start a child: ${describeError(error)}`),
        { cause: error }))
    }
    const candidate = (outcome as { run: unknown }).run
    if (!isRun(candidate)) {
      reject(new SubagentError('PROVIDER_START_FAILED',
        `Subagent provider "${provider.name}" fulfilled start() with something that is not a run (needs result, cancel, dispose).`),
      candidate)
    }

    // The hand-over.
    run = candidate as SubagentRun
    const childId = typeof run.childId === 'string' ? run.childId : undefined
    info = Object.freeze({
      runId,
      provider: provider.name,
      ...request.label === undefined ? {} : { label: request.label },
      parentId: request.parent.id,
      ...childId === undefined ? {} : { childId },
      depth,
      startedAt,
    })
    const runInfo = info
    const providerRun = run
    phase = 'live'
    this.live.set(runId, runInfo)
    this.emit('subagent/start', runInfo)
    for (const update of pending.splice(0)) this.emit('subagent/update', runInfo, update)

    let settle!: (outcome: SubagentOutcome) => void
    const result = new Promise<SubagentOutcome>((resolve) => settle = resolve)
    const finish = (raw: SubagentResult) => {
      if (phase === 'ended') return
      phase = 'ended'
      // Nothing left to cancel: let go of the caller's signal now rather than at dispose.
      caller.removeEventListener('abort', onCallerAbort)
      const settled: SubagentResult = limit ? asLimitStop(raw, limit.stop, limit.reason) : raw
      const tokens = tokensOf(settled.usage)
      if (budget && tokens !== undefined) budget.chargeTokensUpTo(tokens)
      settled.work ??= checkWork(undefined)
      const outcome: SubagentOutcome = Object.freeze({ ...settled, durationMs: Math.max(0, Date.now() - startedAt) })
      this.emit('subagent/end', runInfo, outcome)
      settle(outcome)
    }
    let providerResult: Promise<unknown>
    try {
      providerResult = Promise.resolve(providerRun.result)
    } catch (error) {
      providerResult = Promise.reject(error)
    }
    providerResult.then(
      (raw) => finish(normalise(provider.name, raw)),
      (error) => finish({
        stopReason: 'error',
        output: '',
        diagnostic: capDiagnostic(`Subagent provider "${provider.name}" failed the run: ${describeError(error)}`),
      }),
    )

    let disposal: Promise<void> | undefined
    const dispose = () => disposal ??= (async () => {
      caller.removeEventListener('abort', onCallerAbort)
      if (phase !== 'ended') cancel('The run was disposed.')
      let failure: unknown
      try {
        await providerRun.dispose()
      } catch (error) {
        failure = error
      }
      if (phase !== 'ended') {
        // Give a result that settles right after dispose a chance, then settle it ourselves.
        await new Promise<void>((resolve) => setImmediate(resolve))
        finish({
          stopReason: cancelled ? 'aborted' : 'error',
          output: '',
          diagnostic: `Subagent provider "${provider.name}" disposed the run without settling its result.`,
        })
      }
      this.live.delete(runId)
      release()
      if (failure !== undefined) {
        throw new SubagentError('DISPOSE_FAILED',
          capDiagnostic(`Subagent provider "${provider.name}" failed to dispose run ${runId}: ${describeError(failure)}`),
          { cause: failure })
      }
    })()

    const handle: SubagentHandle = {
      id: runId,
      ...childId === undefined ? {} : { childId },
      info: runInfo,
      result,
      cancel: (reason?: string) => cancel(reason),
      dispose,
    }
    return Object.freeze(handle)
  }

  /** Stops and releases a run that will never be handed over. */
  private async discard(providerName: string, run: unknown): Promise<void> {
    if (!run || typeof run !== 'object') return
    const target = run as Partial<SubagentRun>
    try {
      // Nobody will read this result; keep a late rejection from going unhandled.
      Promise.resolve(target.result).catch(() => {})
      if (typeof target.cancel === 'function') target.cancel('The start was abandoned.')
      if (typeof target.dispose === 'function') await target.dispose()
    } catch (error) {
      this.log.warn('provider %s: cleaning up an abandoned run failed: %s', providerName, describeError(error))
    }
  }

  /**
   * Calls every listener of `name` on its own: a listener that throws or rejects is logged and
   * neither stops the other listeners nor reaches the emitter.
   */
  private emit(name: 'subagent/provider-added', provider: SubagentProvider): void
  private emit(name: 'subagent/provider-removed', providerName: string): void
  private emit(name: 'subagent/start', info: SubagentRunInfo): void
  private emit(name: 'subagent/update', info: SubagentRunInfo, update: SubagentUpdate): void
  private emit(name: 'subagent/end', info: SubagentRunInfo, result: SubagentOutcome): void
  private emit(name: EventName, ...args: unknown[]): void {
    const hooks = this.hooks[name]
    if (!hooks?.length) return
    for (const hook of hooks.slice()) {
      // A listener removed by an earlier listener is not called.
      if (!hooks.includes(hook)) continue
      try {
        const returned = hook.callback(...args)
        if (returned && typeof (returned as PromiseLike<unknown>).then === 'function') {
          Promise.resolve(returned).catch((error) => this.listenerFailed(name, error))
        }
      } catch (error) {
        this.listenerFailed(name, error)
      }
    }
  }

  private listenerFailed(name: string, error: unknown) {
    this.log.warn('a listener of %s failed (ignored): %s', name, describeError(error))
  }
}

export default SubagentService

/** What `startRun` hands `launch` once a start was admitted. */
interface Admission {
  depth: number
  ceiling: number
  parentBudget?: Budget
  slot?: Slot
  release(): void
  refund(): void
}

function aborted(when: string): SubagentError {
  return new SubagentError('ABORTED', `The request's signal was aborted ${when}; no child was started.`)
}

