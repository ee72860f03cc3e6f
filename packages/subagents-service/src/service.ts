import { Context, Logger, Service } from 'cordis'
import type { Budget } from '@cordis-subagents/agent'
import { Config, resolveConfig } from './config.js'
import { SubagentError } from './errors.js'
import { SubagentEvents } from './events.js'
import { BackgroundRegistry } from './background.js'
import { admitChild, budgetOf, depthCeiling } from './limits.js'
import { ParentGates } from './parent-gate.js'
import { type Admission, aborted, RunHandle } from './run-handle.js'
import { type Slot, TreeGates } from './tree-gate.js'
import { TraceSources } from './trace-sources.js'
import { checkCapabilities, checkProvider, checkRequest, checkTraceContext, isObject } from './validate.js'
import type { SubagentHandle, SubagentProvider, SubagentRequest, SubagentRunInfo, TraceContextSource } from './types.js'

declare module 'cordis' {
  interface Context {
    subagents: SubagentService
  }
}

/**
 * `ctx.subagents`: the registry of subagent providers and the one entry point that delegates to
 * children through them (validation, concurrency gates, run wrapper, events).
 */
export class SubagentService extends Service<Config> {
  static Config = Config

  private readonly providers = new Map<string, SubagentProvider>()
  private readonly live = new Map<string, SubagentRunInfo>()
  private readonly parents = new ParentGates()
  private readonly trees = new TreeGates()
  /** The tree slot each delegated run holds, keyed by its budget: its own children may borrow it. */
  private readonly slots = new WeakMap<Budget, Slot>()
  private readonly traces = new TraceSources()
  private stopped = false
  private readonly log: Logger
  /** Background delegations of every parent (see `BackgroundRegistry`). */
  readonly background = new BackgroundRegistry((parent, task, reason) => this.log.warn('background result %s of %s lost: %s', task.handle, parent.id, reason))
  private readonly events: SubagentEvents

  constructor(ctx: Context, config?: Partial<Config>) {
    super(ctx, 'subagents', true)
    this.config = resolveConfig(config)
    this.log = ctx.logger('subagents')
    this.events = new SubagentEvents(ctx, this.log)
  }

  protected override stop() {
    this.stopped = true
    this.background.stopAll()
    const error = () => new SubagentError('ABORTED', 'The subagents service stopped while this start was waiting for a slot.')
    this.trees.failAll(error)
    this.parents.failAll(error)
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
        this.events.emit('subagent/provider-removed', name)
      }
    })
    this.events.emit('subagent/provider-added', provider)
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
   * Delegates `request` to a child started through provider `name`. Fulfilling is the hand-over:
   * the caller then owns the run and must `dispose()` it. Rejects with a `SubagentError`; nothing
   * is left running then.
   */
  async delegate(name: string, request: SubagentRequest): Promise<SubagentHandle> {
    const { provider, admission, traceContext } = await this.admit(name, request)
    // The provider gets the checked copy of the trace context, never the caller's object.
    if (traceContext) request = { ...request, traceContext }
    const run = new RunHandle(provider, request, admission, {
      events: this.events, log: this.log, live: this.live, slots: this.slots, traces: this.traces,
    })
    return run.start()
  }

  /**
   * Adds a source of W3C trace context for delegations whose request carries none (a tracing
   * plugin). It is called synchronously with the provider's request (run id, depth, budget) right
   * before the provider's `start`; the first valid context it returns goes to the provider (an
   * invalid one is logged and ignored). Scoped to the caller.
   */
  traceDelegations(source: TraceContextSource): () => void {
    if (typeof source !== 'function') throw new SubagentError('INVALID_REQUEST', 'traceDelegations() takes a function (request, provider) => traceContext | undefined.')
    return this.ctx.effect(() => this.traces.add(source))
  }

  /** Checks the request, then waits for the per-parent and per-tree slots. */
  private async admit(
    name: string, request: SubagentRequest,
  ): Promise<{ provider: SubagentProvider; admission: Admission; traceContext: SubagentRequest['traceContext'] }> {
    if (this.stopped) throw new SubagentError('NO_PROVIDER', 'The subagents service has stopped.')
    let provider = this.lookup(name, '')
    // What the provider cannot do is reported before what is malformed.
    if (!isObject(request)) throw new SubagentError('INVALID_REQUEST', 'The request must be an object { prompt, parent, signal, ... }.')
    checkCapabilities(provider, request)
    checkRequest(request)
    const traceContext = checkTraceContext(request)
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
      if (this.stopped) throw new SubagentError('NO_PROVIDER', 'The subagents service has stopped.')
      provider = this.lookup(name, ' (it was removed while this start was waiting for a slot)')
      checkCapabilities(provider, request)
      if (request.signal.aborted) throw aborted('while the start was waiting for a slot')
    } catch (error) {
      release()
      refund()
      throw error
    }
    return { provider, admission: { depth, ceiling: ceiling.max, parentBudget, slot, release, refund }, traceContext }
  }

  private lookup(name: string, context: string): SubagentProvider {
    const provider = typeof name === 'string' ? this.providers.get(name) : undefined
    if (provider) return provider
    const names = [...this.providers.keys()]
    throw new SubagentError('NO_PROVIDER',
      `No subagent provider named ${JSON.stringify(name)}${context}. Registered providers: ${names.join(', ') || '(none)'}.`)
  }
}
