import { randomUUID } from 'node:crypto'
import { Context, Logger, Schema, Service } from 'cordis'
import { capDiagnostic, describeError } from './diagnostic.js'
import { SubagentError, type SubagentCapability } from './errors.js'
import { type Slot, TreeGates } from './tree-gate.js'
import type { Budget, BudgetBreach, BudgetLimits, Usage } from '@cordis-subagents/agent'
import type {
  ProviderStartRequest, SubagentHandle, SubagentOutcome, SubagentProvider, SubagentRequest, SubagentResult,
  SubagentRun, SubagentRunInfo, SubagentStopReason, SubagentUpdate, ToolFilter,
} from './types.js'

export * from './types.js'
export * from './errors.js'
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

/** Provider names: 1-64 of `A-Z a-z 0-9 _ -`. */
export const PROVIDER_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/

export const STOP_REASONS: readonly SubagentStopReason[] = ['completed', 'aborted', 'error', 'max-tokens', 'refusal', 'timeout', 'budget']

export interface Config {
  /** How many of one parent's children may be live at once; further starts wait FIFO. */
  maxConcurrentPerParent: number
  /** Deepest child depth, for every provider; a request or a tree budget can only lower it. */
  maxDepth: number
  /** Delegations in one tree (all depths below one root run). */
  maxChildren: number
  /** Delegated runs of one tree working at once; further starts wait FIFO. */
  maxConcurrent: number
}

export const DEFAULTS: Readonly<Config> = Object.freeze({ maxConcurrentPerParent: 8, maxDepth: 3, maxChildren: 64, maxConcurrent: 16 })

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  maxDepth: Schema.natural().default(DEFAULTS.maxDepth)
    .description('Deepest child depth (root agents are depth 0) for every provider. A tool load or a tree budget can lower it, never raise it. ACP children get it in SUBAGENT_MAX_DEPTH.'),
  maxChildren: Schema.natural().default(DEFAULTS.maxChildren)
    .description('Delegations in one tree: every child, grandchild, ... started below one root run. Further starts are refused with BUDGET_EXCEEDED.'),
  maxConcurrent: Schema.natural().min(1).default(DEFAULTS.maxConcurrent)
    .description('Delegated runs of one tree working at once. Further starts wait FIFO; a parent waiting on its children lends them its slot, so nesting never deadlocks.'),
  maxConcurrentPerParent: Schema.natural().min(1).default(DEFAULTS.maxConcurrentPerParent)
    .description('How many children one parent agent may have live at once (started and not yet disposed). Further starts wait in FIFO order.'),
}) as Schema<Partial<Config>, Config>

type EventName =
  | 'subagent/provider-added' | 'subagent/provider-removed'
  | 'subagent/start' | 'subagent/update' | 'subagent/end'

interface Waiter {
  grant(): void
  fail(error: SubagentError): void
}

interface Gate {
  /** Slots held: granted starts plus handed-over runs not yet disposed. */
  active: number
  queue: Waiter[]
}

interface State {
  stopped: boolean
}

const ANY_STOP = new Set<string>(STOP_REASONS)

/**
 * `ctx.subagents`: the registry of subagent providers and the one entry point that starts
 * children through them (validation, per-parent concurrency gate, run wrapper, events).
 */
export class SubagentService extends Service<Config> {
  static Config = Config

  private readonly providers = new Map<string, SubagentProvider>()
  private readonly live = new Map<string, SubagentRunInfo>()
  /** Keyed by the parent object, not its id: ids may repeat across agent runtimes. */
  private readonly gates = new Map<object, Gate>()
  private readonly trees = new TreeGates()
  /** The tree slot each delegated run holds, keyed by its budget: its own children may borrow it. */
  private readonly slots = new WeakMap<Budget, Slot>()
  private readonly state: State = { stopped: false }
  private readonly log: Logger
  private readonly hooks: Record<keyof any, { callback: (...args: any[]) => any }[]>

  constructor(ctx: Context, config?: Partial<Config>) {
    super(ctx, 'subagents', true)
    this.config = { ...DEFAULTS, ...definedOnly(config) }
    for (const key of Object.keys(DEFAULTS) as (keyof Config)[]) {
      const value = this.config[key]
      const min = key === 'maxDepth' || key === 'maxChildren' ? 0 : 1
      if (!Number.isSafeInteger(value) || value < min) {
        throw new SubagentError('INVALID_REQUEST', `subagents config ${key} must be an integer >= ${min}, got ${String(value)}.`)
      }
    }
    this.log = ctx.logger('subagents')
    this.hooks = ctx.lifecycle._hooks
  }

  protected override stop() {
    this.state.stopped = true
    this.trees.failAll(() => new SubagentError('ABORTED', 'The subagents service stopped while this start was waiting for a slot.'))
    for (const gate of this.gates.values()) {
      for (const waiter of gate.queue.splice(0)) {
        waiter.fail(new SubagentError('ABORTED', 'The subagents service stopped while this start was waiting for a slot.'))
      }
    }
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
    if (parentBudget) this.admitChild(parentBudget, request.parent.id)
    const refund = () => parentBudget?.charge('children', -1)

    const key: object = request.parent
    const perParent = Math.min(this.config.maxConcurrentPerParent, request.budget?.maxConcurrent ?? Infinity)
    let slot: Slot | undefined
    try {
      await this.acquire(key, perParent, request.signal)
      if (parentBudget) {
        const root = parentBudget.root
        const limit = Math.min(this.config.maxConcurrent, root.limits.maxConcurrent)
        slot = await this.trees.acquire(root, limit, this.slots.get(parentBudget), request.signal,
          () => aborted('while the start was waiting for a slot')).catch((error) => {
          this.release(key)
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
      this.release(key)
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

  /** Refuses a start the parent's tree budget cannot pay for; otherwise counts the delegation. */
  private admitChild(budget: Budget, parentId: string) {
    const spent = budget.overtime() ?? budget.check('steps', 0) ?? budget.check('tokens')
    if (spent) {
      throw new SubagentError('BUDGET_EXCEEDED',
        `"${parentId}" cannot delegate: ${describeLimit(spent)} is spent. Answer with what you have.`, { breach: spent })
    }
    const treeTotal = budget.root.spent.children
    const breach: BudgetBreach | undefined = budget.check('children', 1)
      ?? (treeTotal + 1 > this.config.maxChildren ? { budget: 'children', limit: this.config.maxChildren, spent: treeTotal } : undefined)
    if (breach) {
      throw new SubagentError('BUDGET_EXCEEDED',
        `"${parentId}" cannot delegate: ${describeLimit(breach)} is reached in this delegation tree. Do the rest yourself, or answer with what you have.`,
        { breach })
    }
    budget.charge('children', 1)
  }

  private lookup(name: string, context: string): SubagentProvider {
    const provider = typeof name === 'string' ? this.providers.get(name) : undefined
    if (provider) return provider
    const names = [...this.providers.keys()]
    throw new SubagentError('NO_PROVIDER',
      `No subagent provider named ${JSON.stringify(name)}${context}. Registered providers: ${names.join(', ') || '(none)'}.`)
  }

  private acquire(key: object, limit: number, signal: AbortSignal): Promise<void> {
    let gate = this.gates.get(key)
    if (!gate) this.gates.set(key, gate = { active: 0, queue: [] })
    if (gate.active < limit && !gate.queue.length) {
      gate.active++
      return Promise.resolve()
    }
    const queue = gate.queue
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const index = queue.indexOf(waiter)
        if (index >= 0) queue.splice(index, 1)
        reject(aborted('while the start was waiting for a slot'))
      }
      const waiter: Waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort)
          resolve()
        },
        fail: (error) => {
          signal.removeEventListener('abort', onAbort)
          reject(error)
        },
      }
      signal.addEventListener('abort', onAbort, { once: true })
      queue.push(waiter)
    })
  }

  /** Frees a slot of `key`, handing it straight to the oldest waiter (FIFO, no barging). */
  private release(key: object) {
    const gate = this.gates.get(key)
    if (!gate) return
    const next = gate.queue.shift()
    if (next) return next.grant()
    gate.active--
    if (gate.active <= 0 && !gate.queue.length) this.gates.delete(key)
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

/** The parent's live budget, when it has one (agents of `ctx.agents` do). */
function budgetOf(parent: SubagentRequest['parent']): Budget | undefined {
  const budget = (parent as { budget?: unknown }).budget as Budget | undefined
  return budget && typeof budget.child === 'function' && typeof budget.check === 'function' ? budget : undefined
}

function depthCeiling(deployment: number, requested: number | undefined, budget: Budget | undefined): { max: number; source: string } {
  let ceiling = { max: deployment, source: 'the deployment\'s maxDepth' }
  if (requested !== undefined && requested < ceiling.max) ceiling = { max: requested, source: 'maxDepth' }
  const tree = budget?.limits.maxDepth
  if (tree !== undefined && tree < ceiling.max) ceiling = { max: tree, source: 'the tree budget\'s maxDepth' }
  return ceiling
}

const LIMIT_WORDS: Record<string, string> = {
  steps: 'model calls', tokens: 'tokens', toolCalls: 'tool calls', wallMs: 'ms of wall time', children: 'delegations', depth: 'levels',
}

function describeLimit(breach: BudgetBreach): string {
  return `the ${breach.budget} budget (${breach.limit} ${LIMIT_WORDS[breach.budget] ?? ''}; ${breach.spent} spent)`
}

/** `timeout` / `budget` for an abort reason that names a limit (a `LimitError` of the agent package, by its code). */
function limitStopOf(reason: unknown): 'timeout' | 'budget' | undefined {
  const code = isObject(reason) ? reason.code : undefined
  return code === 'TIMEOUT' ? 'timeout' : code === 'BUDGET_EXCEEDED' ? 'budget' : undefined
}

/** A run a limit cancelled is reported as that limit, never as a cancel or a failure. */
function asLimitStop(raw: SubagentResult, stop: 'timeout' | 'budget', reason: unknown): SubagentResult {
  if (raw.stopReason !== 'aborted' && raw.stopReason !== 'error') return raw
  const breach = isObject(reason) && isObject(reason.breach) ? reason.breach as unknown as BudgetBreach : undefined
  const headline = stop === 'timeout'
    ? `Stopped by a timeout: ${describeError(reason)}.`
    : `Stopped by ${breach ? describeLimit(breach) : 'a budget'}.`
  const result: SubagentResult = {
    ...raw, stopReason: stop, diagnostic: capDiagnostic(raw.diagnostic ? `${headline} ${raw.diagnostic}` : headline),
  }
  if (breach) result.budget = breach
  return result
}

/** Input + output tokens of a usage from outside, or undefined when it is not well-formed. */
function tokensOf(usage: Usage | undefined): number | undefined {
  const checked = checkUsage(usage)
  return checked ? checked.inputTokens + checked.outputTokens : undefined
}

/** A usage whose counts are finite non-negative integers; anything else is dropped. */
function checkUsage(usage: unknown): Usage | undefined {
  if (!isObject(usage)) return undefined
  const { inputTokens, outputTokens, cachedInputTokens } = usage
  if (!isCount(inputTokens) || !isCount(outputTokens)) return undefined
  const checked: Usage = { inputTokens, outputTokens }
  if (isCount(cachedInputTokens)) checked.cachedInputTokens = cachedInputTokens
  return checked
}

/** The child tree's work as the provider reported it (zero counts where it did not), each a non-negative integer. */
function checkWork(work: unknown): SubagentResult['work'] & object {
  const counts = isObject(work) ? work : {}
  const read = (value: unknown) => (isCount(value) ? value : 0)
  return { steps: read(counts.steps), toolCalls: read(counts.toolCalls), delegations: read(counts.delegations) }
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

function definedOnly<T extends object>(value: T | undefined): Partial<T> {
  const result: Partial<T> = {}
  if (!value) return result
  for (const [key, entry] of Object.entries(value)) {
    if (entry !== undefined) (result as Record<string, unknown>)[key] = entry
  }
  return result
}

function aborted(when: string): SubagentError {
  return new SubagentError('ABORTED', `The request's signal was aborted ${when}; no child was started.`)
}

function reasonText(reason: unknown): string | undefined {
  if (reason === undefined) return undefined
  if (typeof reason === 'string') return reason
  return describeError(reason)
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}

function isRun(value: unknown): value is SubagentRun {
  if (!isObject(value)) return false
  try {
    return isObject(value.result) && typeof value.result.then === 'function'
      && typeof value.cancel === 'function' && typeof value.dispose === 'function'
  } catch {
    return false
  }
}

function invalidProvider(message: string): never {
  throw new SubagentError('INVALID_PROVIDER', message)
}

function checkProvider(provider: SubagentProvider) {
  if (!isObject(provider)) invalidProvider('A subagent provider must be an object.')
  const { name } = provider
  if (typeof name !== 'string' || !PROVIDER_NAME_PATTERN.test(name)) {
    invalidProvider(`Invalid subagent provider name ${JSON.stringify(name)}: use 1-64 of A-Z a-z 0-9 _ -.`)
  }
  if (provider.description !== undefined && typeof provider.description !== 'string') {
    invalidProvider(`Subagent provider "${name}": description must be a string when present.`)
  }
  const { capabilities } = provider
  if (!isObject(capabilities)) {
    invalidProvider(`Subagent provider "${name}": capabilities must be an object { persona, toolFilter, depthLimit } of booleans.`)
  }
  for (const key of ['persona', 'toolFilter', 'depthLimit'] as const) {
    if (typeof capabilities[key] !== 'boolean') {
      invalidProvider(`Subagent provider "${name}": capabilities.${key} must be a boolean.`)
    }
  }
  if (typeof provider.inheritsParentContext !== 'boolean') {
    invalidProvider(`Subagent provider "${name}": inheritsParentContext must be a boolean.`)
  }
  if (typeof provider.start !== 'function') {
    invalidProvider(`Subagent provider "${name}": start must be a function returning a promise of a run.`)
  }
}

function invalidRequest(message: string): never {
  throw new SubagentError('INVALID_REQUEST', message)
}

function isSignal(value: unknown): value is AbortSignal {
  if (value instanceof AbortSignal) return true
  return isObject(value) && typeof value.aborted === 'boolean'
    && typeof value.addEventListener === 'function' && typeof value.removeEventListener === 'function'
}

function checkRequest(request: SubagentRequest) {
  if (!isObject(request)) invalidRequest('The subagent request must be an object.')
  if (typeof request.prompt !== 'string' || !request.prompt.trim()) {
    invalidRequest('request.prompt must be a non-empty string: the task for the child.')
  }
  const { parent } = request
  if (!isObject(parent) || typeof parent.id !== 'string' || !parent.id
    || !Number.isInteger(parent.depth) || parent.depth < 0) {
    invalidRequest('request.parent must be the calling Agent (with a string id and a non-negative integer depth).')
  }
  if (!isSignal(request.signal)) invalidRequest('request.signal must be an AbortSignal.')
  if (request.label !== undefined && typeof request.label !== 'string') {
    invalidRequest('request.label must be a string when present.')
  }
  if (request.persona !== undefined && (typeof request.persona !== 'string' || !request.persona.trim())) {
    invalidRequest('request.persona must be a non-empty string when present; omit it for the default persona.')
  }
  if (request.agentOptions !== undefined) {
    if (!isObject(request.agentOptions)) invalidRequest('request.agentOptions must be an object when present.')
    const { model } = request.agentOptions
    if (model !== undefined && (typeof model !== 'string' || !model)) {
      invalidRequest('request.agentOptions.model must be a non-empty model ref when present.')
    }
  }
  if (request.toolFilter !== undefined) checkToolFilter(request.toolFilter)
  if (request.maxDepth !== undefined && (!Number.isInteger(request.maxDepth) || request.maxDepth < 0)) {
    invalidRequest(`request.maxDepth must be a non-negative integer, got ${String(request.maxDepth)}.`)
  }
  if (request.budget !== undefined) checkBudget(request.budget)
  if (request.onUpdate !== undefined && typeof request.onUpdate !== 'function') {
    invalidRequest('request.onUpdate must be a function when present.')
  }
}

function checkToolFilter(filter: ToolFilter) {
  if (!isObject(filter) || Array.isArray(filter)) {
    invalidRequest('request.toolFilter must be an object { allow?, deny? } of tool-name arrays.')
  }
  for (const key of Object.keys(filter)) {
    if (key !== 'allow' && key !== 'deny' && (filter as Record<string, unknown>)[key] !== undefined) {
      invalidRequest(`request.toolFilter has an unknown key "${key}"; only allow and deny are understood.`)
    }
  }
  for (const key of ['allow', 'deny'] as const) {
    const list = filter[key]
    if (list === undefined) continue
    if (!Array.isArray(list) || !list.every((name) => typeof name === 'string' && name)) {
      invalidRequest(`request.toolFilter.${key} must be an array of tool names.`)
    }
  }
  if (filter.allow === undefined && filter.deny === undefined) {
    invalidRequest('request.toolFilter is empty (neither allow nor deny); omit toolFilter to keep the parent\'s tools.')
  }
}

const BUDGET_KEYS = ['maxSteps', 'maxTokens', 'maxToolCalls', 'maxWallMs', 'maxChildren', 'maxConcurrent', 'maxDepth']

function checkBudget(budget: BudgetLimits) {
  if (!isObject(budget) || Array.isArray(budget)) invalidRequest('request.budget must be an object of limits.')
  for (const [key, value] of Object.entries(budget)) {
    if (value === undefined) continue
    if (!BUDGET_KEYS.includes(key)) invalidRequest(`request.budget has an unknown key "${key}"; budgets are ${BUDGET_KEYS.join(', ')}.`)
    if (!isCount(value)) invalidRequest(`request.budget.${key} must be a non-negative integer, got ${String(value)}.`)
  }
}

function unsupported(provider: SubagentProvider, capability: SubagentCapability, option: string): never {
  throw new SubagentError('UNSUPPORTED_CAPABILITY',
    `Subagent provider "${provider.name}" does not support ${option} (capability "${capability}"); remove ${option} from the request or use a provider that has it.`,
    { capability })
}

function checkCapabilities(provider: SubagentProvider, request: SubagentRequest) {
  const { capabilities } = provider
  if (request.persona !== undefined && !capabilities.persona) unsupported(provider, 'persona', 'persona')
  if (request.toolFilter !== undefined && !capabilities.toolFilter) unsupported(provider, 'toolFilter', 'toolFilter')
  if (request.maxDepth !== undefined && !capabilities.depthLimit) unsupported(provider, 'depthLimit', 'maxDepth')
}

/** Turns whatever the provider's result fulfilled with into a well-formed result. */
function normalise(providerName: string, raw: unknown): SubagentResult {
  if (!isObject(raw)) {
    return {
      stopReason: 'error',
      output: '',
      diagnostic: `Subagent provider "${providerName}" settled the run with ${raw === null ? 'null' : typeof raw}, not a result object.`,
    }
  }
  const problems: string[] = []
  let stopReason = raw.stopReason as SubagentStopReason
  if (typeof stopReason !== 'string' || !ANY_STOP.has(stopReason)) {
    problems.push(`unknown stop reason ${safeJson(raw.stopReason)}`)
    stopReason = 'error'
  }
  let output = raw.output
  if (typeof output !== 'string') {
    problems.push(`output is ${output === null ? 'null' : typeof output}, not a string`)
    output = ''
    stopReason = 'error'
  }
  let diagnostic = raw.diagnostic === undefined || raw.diagnostic === null ? undefined : reasonText(raw.diagnostic)
  if (problems.length) {
    const headline = `Subagent provider "${providerName}" returned a malformed result: ${problems.join('; ')}.`
    diagnostic = diagnostic ? `${headline} Provider diagnostic: ${diagnostic}` : headline
  }
  const result: SubagentResult = { stopReason, output: output as string }
  if (diagnostic) result.diagnostic = capDiagnostic(diagnostic)
  const usage = checkUsage(raw.usage)
  if (usage) result.usage = usage
  result.work = checkWork(raw.work)
  if (isObject(raw.budget)) result.budget = raw.budget as unknown as BudgetBreach
  return result
}

function safeJson(value: unknown): string {
  try {
    return capDiagnostic(JSON.stringify(value) ?? String(value), 200)
  } catch {
    return 'an unprintable value'
  }
}
