import { resolve } from 'node:path'
import { type Context, Service } from 'cordis'
import { countProblem, type Crossing, lowestLimits } from '@cordis-subagents/shared'
import type { ToolRegistry, ToolResult, ToolView } from '@cordis-subagents/tools'
import { Agent, type AgentInit } from './agent.js'
import { Budget } from './budget.js'
import { budgetProblem, type CreateAgentOptions, type CreateDefaults, restoredInit, type RuntimeConfig } from './create-options.js'
import type { Endpoint } from './endpoint.js'
import { AgentError } from './errors.js'
import type { AgentObserver } from './observers.js'
import type { BudgetHandlers, ContinueHooks } from './continue-hooks.js'
import type { HookSettings } from './hook-run.js'
import { hooksProblem, sinkProblem } from './hooks.js'
import { outputContract } from './output.js'
import type { RootCrossing } from './root-crossing.js'
import { noteBudget, budgetNoteProblem } from './budget-note.js'
import { tellParentProblem, tellParentTool } from './tell-parent.js'
import { seedProblem } from './history.js'
import { Transcript } from './transcript.js'
import type { TurnHost, TurnWatch } from './turn-owner.js'
import type { BudgetLimits, ChatModel, GateTarget, GenerateRequest, GenerateResponse, ModelToolCall, RunResult } from './types.js'

// The part of `ctx.agents` one delegation runs through: `create` (its options checked, its settings
// resolved, the agent built) and the seam every agent it builds calls back into (models, the gate's
// counted path, the observers' watch of a run). Registration, serving and the config schema: runtime.ts.

/** What the runtime (runtime.ts) makes once, at registration, for `create` and the seam. */
export interface RuntimeParts {
  registry: ToolRegistry
  continueHooks: ContinueHooks
  budgetHandlers: BudgetHandlers
  hookSettings: HookSettings
  modelGate?: CountedGate
  /** The config's budget checked, then the crossing read (after the seam is made, as it always was). */
  rootOf(): RootCrossing
}
type MakeParts = (ctx: Context, config: RuntimeConfig, defaults: CreateDefaults) => RuntimeParts

export abstract class AgentFactory extends Service<RuntimeConfig> {
  protected readonly models = new Map<string, ChatModel>()
  /** Captured once: callers of `create` need not inject `tools` themselves. */
  private readonly registry: ToolRegistry
  private counter = 0
  /** What a parent host of ours passed in `SUBAGENT_*` (depth, ceiling, budget), read once; its tool ceiling: `rootCeiling`. */
  readonly rootCrossing: Crossing
  /** Depth of agents created without a parent. */
  readonly rootDepth: number
  /** Limits of root runs: the config's, lowered by what a parent host passed in `SUBAGENT_BUDGET`. */
  readonly rootLimits: BudgetLimits
  protected readonly ceiling: RootCrossing['ceiling']
  protected readonly budgetHandlers: BudgetHandlers
  protected readonly observers = new Observers()
  protected readonly continueHooks: ContinueHooks
  protected readonly hookSettings: HookSettings
  /** The gate around model calls; undefined when no cap is configured. */
  readonly modelGate?: CountedGate
  /** The runtime's seam, one plain object shared by every agent it builds (each call names its agent: an `Agent` of this runtime). */
  private readonly seam: TurnHost
  private rootView?: ToolView

  protected constructor(ctx: Context, config: RuntimeConfig, private readonly defaults: CreateDefaults, makeParts: MakeParts) {
    super(ctx, 'agents', true)
    this.config = config
    const { registry, continueHooks, budgetHandlers, hookSettings, modelGate, rootOf } = makeParts(ctx, config, defaults)
    this.registry = registry; this.modelGate = modelGate
    this.continueHooks = continueHooks; this.budgetHandlers = budgetHandlers; this.hookSettings = hookSettings
    // Agents call back into the runtime every step: they get this plain object, not the caller-tracing proxy `this` may be.
    this.seam = {
      resolveModel: (ref) => this.resolveModel(ref),
      modelGate: this.modelGate,
      budgetReached: (agent, breach) => budgetHandlers.size ? budgetHandlers.reached(agent as Agent, breach) : false,
      // Without observers or hooks the loop pays one size check, and enters neither file.
      watch: (agent, prompt, resumed) => this.observers.size ? this.observers.watch(agent as Agent, prompt, resumed) : undefined,
      stopBefore: (agent, step) => continueHooks.size ? continueHooks.ask(agent as Agent, step) : undefined,
      // Until a hook or a sink is set anywhere, a leg pays one field read here and builds nothing.
      hookRun: (agent, turn, abort) => hookSettings.used ? hookSettings.run(agent, turn, abort) : undefined,
    }
    const root = rootOf()
    this.rootCrossing = root.crossing
    this.rootDepth = root.rootDepth
    this.rootLimits = root.rootLimits
    this.ceiling = root.ceiling
  }

  /** A root agent's tools: the given view (else every tool), under the bound ceiling. */
  private rootTools(tools: ToolView | undefined): ToolView {
    // A root without tools of its own sees the registry through one live view, made once (views are immutable windows).
    const view = tools ?? (this.rootView ??= this.registry.view())
    return this.ceiling.tools ? this.ceiling.apply(view) : view
  }

  /** Finds the model behind a ref. An unknown ref yields an error text naming the registered models. */
  resolveModel(ref: string | undefined): { model: ChatModel; name: string; modelId?: string } | { error: string } {
    ref ||= this.config.model
    // The list of names is built only for a ref that does not name a model (every model call resolves one).
    if (!ref) {
      const names = [...this.models.keys()]
      if (names.length === 1) return { model: this.models.get(names[0])!, name: names[0] }
      return { error: `No model was named and no default is configured. Registered models: ${names.join(', ') || '(none)'}.` }
    }
    const colon = ref.indexOf(':')
    const name = colon < 0 ? ref : ref.slice(0, colon)
    const model = this.models.get(name)
    if (!model) return { error: `Unknown model "${ref}". Registered models: ${[...this.models.keys()].join(', ') || '(none)'}.` }
    return colon < 0 ? { model, name } : { model, name, modelId: ref.slice(colon + 1) }
  }

  /**
   * A new agent, or (with `restore`: what `agent.checkpoint()` returned, as JSON) the agent a
   * checkpoint holds, rebuilt with its id, settings, transcript, tallies and parked turn.
   */
  create(options: CreateAgentOptions = {}): Agent {
    checkOptions(options)
    const { parent } = options
    if (parent !== undefined && !(parent instanceof Agent)) throw new AgentError('INVALID_OPTIONS', 'options.parent must be an Agent created by ctx.agents.')
    // Ids minted from now on skip the restored one (ids are `<label>-<n>` with one counter per runtime).
    if (options.restore !== undefined) return this.build(options, restoredInit(options, (n) => this.counter = Math.max(this.counter, n)))
    const maxSteps = options.maxSteps ?? this.config.maxSteps ?? this.defaults.maxSteps
    const maxToolCallsPerStep = options.maxToolCallsPerStep ?? this.config.maxToolCallsPerStep ?? this.defaults.maxToolCallsPerStep
    const problem = countProblem('options.maxSteps', maxSteps, { min: 1 })
      ?? countProblem('options.maxToolCallsPerStep', maxToolCallsPerStep, { min: 1 })
    if (problem) throw new AgentError('INVALID_OPTIONS', problem)
    return this.build(options, {
      id: `${options.label ?? 'agent'}-${++this.counter}`,
      depth: parent ? parent.depth + 1 : this.rootDepth,
      // A parent's cwd is already absolute.
      cwd: options.cwd === undefined && parent ? parent.cwd : resolve(options.cwd ?? this.config.cwd ?? process.cwd()),
      persona: options.persona ?? this.config.persona,
      model: options.model ?? parent?.model ?? this.config.model,
      seed: options.seed,
      maxSteps,
      maxTokens: options.maxTokens ?? this.config.maxTokens,
      label: options.label,
      maxToolCallsPerStep,
      maxInboxMessages: options.maxInboxMessages,
      output: options.output === undefined ? undefined : outputContract(options.output, 'options.output'),
      // Set by `build`; named here so every init has one shape.
      parent,
      tools: UNSET_TOOLS,
      budget: undefined,
      budgetLimits: undefined,
    })
  }

  /**
   * The agent, given what `create` resolved (`init`, a fresh object of its, gets its tools and
   * budget here, from the options and the parent: assigned, not spread into a copy).
   */
  private build(options: CreateAgentOptions, init: AgentInit): Agent {
    const { parent } = options
    const carved = options.budget instanceof Budget ? options.budget : undefined
    const limits = carved ? undefined : options.budget as BudgetLimits | undefined
    const tools = parent ? options.tools ?? parent.tools : this.rootTools(options.tools)
    init.parent = parent
    // Every agent below depth 0 (a child here, or a root whose host a parent elsewhere started)
    // loses the tools meant for shallower agents (`maxCallerDepth`, e.g. a non-nested delegation tool).
    init.tools = init.depth > 0 ? tools.forDepth(init.depth) : tools
    for (const tool of options.ownTools ?? []) init.tools = init.tools.with(tool)
    if (options.tellParent && (parent || options.tellTo)) init.tools = init.tools.with(tellParentTool(options.tellParent, options.tellTo))
    init.budget = carved
    init.budgetLimits = parent ? limits : lowestLimits<BudgetLimits>(this.rootLimits, limits)
    const agent = new Agent(this.seam, init)
    if (options.budgetNote) noteBudget(agent, options.budgetNote)
    // Never the parent's: a child without its own gets the runtime's (README, "Hooks and metrics").
    if (options.hooks !== undefined || options.metrics !== undefined) this.hookSettings.own(agent, options.hooks, options.metrics)
    return agent
  }
}

/** `init.tools` before `build` sets it. */
const UNSET_TOOLS = undefined as unknown as ToolView

/** Catches misuse at `create`, where it is easy to trace, rather than as an odd failure mid-run. */
function checkOptions(options: CreateAgentOptions): void {
  if (options === null || typeof options !== 'object') throw new AgentError('INVALID_OPTIONS', 'create() takes an options object.')
  for (const key of ['model', 'persona', 'cwd', 'label'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'string') {
      throw new AgentError('INVALID_OPTIONS', `options.${key} must be a string, got ${typeof options[key]}.`)
    }
  }
  const { maxTokens, tools, seed } = options
  // Checked here only when given: an agent without them never enters hooks.ts.
  if (options.hooks !== undefined || options.metrics !== undefined) {
    const problem = hooksProblem(options.hooks, 'options.hooks') ?? sinkProblem(options.metrics, 'options.metrics')
    if (problem) throw new AgentError('INVALID_OPTIONS', problem)
  }
  if (options.budget !== undefined && !(options.budget instanceof Budget)) {
    const problem = budgetProblem(options.budget, 'options.budget')
    if (problem) throw new AgentError('INVALID_OPTIONS', problem)
  }
  const countsProblem = (maxTokens === undefined ? undefined : countProblem('options.maxTokens', maxTokens, { min: 1 }))
    ?? (options.maxInboxMessages === undefined ? undefined : countProblem('options.maxInboxMessages', options.maxInboxMessages, { min: 1 }))
  if (options.budgetNote !== undefined || options.tellParent !== undefined) {
    const aidProblem = budgetNoteProblem(options.budgetNote) ?? tellParentProblem(options.tellParent)
      ?? (options.tellTo === undefined || typeof options.tellTo === 'function' ? undefined : 'options.tellTo must be a function.')
    if (aidProblem) throw new AgentError('INVALID_OPTIONS', aidProblem)
  }
  if (countsProblem) throw new AgentError('INVALID_OPTIONS', countsProblem)
  if (tools !== undefined && !isToolView(tools)) throw new AgentError('INVALID_OPTIONS', 'options.tools must be a ToolView (ctx.tools.view(), or a view\'s restrict()); pass a filter through restrict.')
  const seeded = seed === undefined || seed instanceof Transcript ? undefined : seedProblem(seed)
  if (seeded) throw new AgentError('INVALID_OPTIONS', seeded)
}

function isToolView(value: unknown): value is ToolView {
  const view = value as ToolView | null
  return !!view && typeof view === 'object' && typeof view.list === 'function'
    && typeof view.execute === 'function' && typeof view.restrict === 'function' && typeof view.has === 'function'
    && typeof view.forDepth === 'function'
}

/** The observers of one run, fixed when it began: an observer added mid-run sees the next run. */
class RunWatch implements TurnWatch {
  constructor(private readonly agent: Agent, private readonly observers: readonly AgentObserver[]) {}

  // Each method calls every observer in its own try: an observer must never break the loop
  // (no closure per call: these run for every model and tool call of an observed run).

  modelStart(step: number, model: string | undefined): void {
    for (const observer of this.observers) try { observer.modelCallStart?.(this.agent, step, model) } catch { /* ignored */ }
  }

  modelEnd(step: number, response: GenerateResponse | undefined, error?: unknown, aborted = false): void {
    for (const observer of this.observers) {
      try { observer.modelCallEnd?.(this.agent, step, response, error, aborted) } catch { /* ignored */ }
    }
  }

  toolStart(step: number, call: ModelToolCall): void {
    for (const observer of this.observers) try { observer.toolCallStart?.(this.agent, step, call) } catch { /* ignored */ }
  }

  toolEnd(step: number, call: ModelToolCall, result: ToolResult): void {
    for (const observer of this.observers) try { observer.toolCallEnd?.(this.agent, step, call, result) } catch { /* ignored */ }
  }

  end(result: RunResult): void {
    for (const observer of this.observers) try { observer.runEnd?.(this.agent, result) } catch { /* ignored */ }
  }
}

/** The observers of a runtime (`ctx.agents.observe`). With none, the seam's `watch` returns undefined after one size check. */
class Observers {
  private readonly set = new Set<AgentObserver>()
  /** A copy taken when the set changes, so a run's start copies nothing. */
  private list: readonly AgentObserver[] = []
  /** How many observers there are: a field, so a run's check is a read. */
  size = 0

  add(observer: AgentObserver): () => void {
    this.set.add(observer)
    this.changed()
    return () => {
      this.set.delete(observer)
      this.changed()
    }
  }

  private changed(): void {
    this.list = [...this.set]
    this.size = this.list.length
  }

  /** Tells the observers that `agent` begins a run; the watch reports the rest of it to those that did not decline it. */
  watch(agent: Agent, prompt: string, resumed?: string): RunWatch | undefined {
    const observers = this.list
    // Built only once an observer declines; until then the shared list serves as is.
    let watching: AgentObserver[] | undefined
    for (let i = 0; i < observers.length; i++) {
      const observer = observers[i]
      let declined = false
      try {
        declined = (resumed === undefined ? observer.runStart?.(agent, prompt) : observer.runStart?.(agent, prompt, resumed)) === false
      } catch { /* ignored: an observer must never break the loop */ }
      if (declined) watching ??= observers.slice(0, i)
      else watching?.push(observer)
    }
    const list = watching ?? observers
    return list.length ? new RunWatch(agent, list) : undefined
  }
}

/**
 * The model gate's count of calls in flight per endpoint (a 429/503 there pauses every call to it), and
 * the one path most model calls take through it: with no cap configured and the shared backoff on, a
 * call to an endpoint never refused (or recovered) is only counted. Caps, an endpoint's backoff state
 * and a refusal are the gate's own (`ModelGate`, model-gate.ts: `gated`, `failed`).
 */
export abstract class CountedGate {
  /** Endpoints under backoff (refused, and not yet recovered); calls in flight per endpoint with no state here. */
  protected readonly endpoints = new Map<string, Endpoint>()
  protected readonly unlimited = new Map<string, number>()
  /** No cap is configured and the backoff is on: a call to an endpoint with no state is only counted. */
  protected countOnly = false

  /** One model call through the gate (see `ModelGate.gated`). */
  async generate(target: GateTarget, request: GenerateRequest): Promise<GenerateResponse> {
    // The turn calls only while it is not aborted (its signal is made only if read); `gated` checks it before waiting.
    if (!this.countOnly) return this.gated(target, request)
    const key = this.keyOf(target)
    if (this.endpoints.has(key)) return this.gated(target, request, key)
    // The request is the turn's own, made for this call: marked in place (a spread copy takes V8's slow path).
    request.rateLimits = 'gate'
    this.unlimited.set(key, (this.unlimited.get(key) ?? 0) + 1)
    let response: GenerateResponse
    try {
      response = await target.model.generate(request)
    } catch (error) {
      return this.failed(target, request, key, error, performance.now())
    }
    // An endpoint made meanwhile (another call was refused) took this call over, at epoch 0.
    this.endpoints.get(key)?.succeeded(0)
    this.leave(key, undefined)
    return response
  }

  protected keyOf(target: GateTarget): string {
    return target.model.rateLimitKey?.(target.modelId) ?? (target.modelId ? `${target.name}:${target.modelId}` : target.name)
  }

  protected abstract gated(target: GateTarget, request: GenerateRequest, key?: string): Promise<GenerateResponse>

  protected abstract failed(target: GateTarget, req: GenerateRequest, key: string, error: unknown, at: number): Promise<GenerateResponse>

  /**
   * A call to `key` ends its attempt: its slot of the endpoint it held goes back, or, when it went
   * through unlimited, of the endpoint made meanwhile, else its count. An endpoint with nothing
   * left to remember is dropped (the next call goes through unlimited again).
   */
  protected leave(key: string, held: Endpoint | undefined): void {
    const endpoint = held ?? this.endpoints.get(key)
    if (endpoint) {
      endpoint.free()
      if (endpoint.idle && this.endpoints.get(key) === endpoint) this.endpoints.delete(key)
      return
    }
    const left = this.unlimited.get(key)! - 1
    // An idle endpoint's count stays at 0 (a few): deleting a Map's last entry makes V8 build it a new table, which
    // outlives the next young collection, on every model call of a host that calls one at a time.
    if (left || this.unlimited.size <= MAX_IDLE_COUNTS) this.unlimited.set(key, left)
    else this.unlimited.delete(key)
  }
}

/** Most idle endpoints whose count (0) is kept; past these, an idle endpoint's count goes. */
const MAX_IDLE_COUNTS = 64
