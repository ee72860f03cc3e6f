import { resolve } from 'node:path'
import { type Context, Service } from 'cordis'
import { countProblem, type Crossing, lowestLimits, withoutCallerTracing } from '@cordis-subagents/shared'
import type { ToolRegistry, ToolView } from '@cordis-subagents/tools'
import { Agent, type AgentHost, type AgentInit } from './agent.js'
import { Budget } from './budget.js'
import { budgetProblem, type CreateAgentOptions, restoredInit, type RuntimeConfig } from './create-options.js'
import { AgentError } from './errors.js'
import type { AgentObserver } from './observers.js'
import { BudgetHandlers, ContinueHooks } from './continue-hooks.js'
import { HookSettings } from './hook-run.js'
import { hooksProblem, sinkProblem } from './hooks.js'
import { ModelGate } from './model-gate.js'
import { outputContract } from './output.js'
import type { RootCeiling } from './root-ceiling.js'
import { readRootCrossing } from './root-crossing.js'
import { noteBudget, budgetNoteProblem } from './budget-note.js'
import { tellParentProblem, tellParentTool } from './tell-parent.js'
import { isFrozenHistory } from './transcript.js'
import type { TurnWatch } from './turn-owner.js'
import type { BudgetLimits, ChatModel, GenerateResponse, ModelToolCall, RunResult } from './types.js'
import type { ToolResult } from '@cordis-subagents/tools'

// The part of `ctx.agents` one delegation runs through: `create` (its options checked, its settings
// resolved, the agent built) and the seam every agent it builds calls back into (models, the gate,
// the observers' watch of a run). Registration, serving and the config schema: runtime.ts.

/** The schema defaults `create` falls back to (the runtime's config schema holds them). */
export interface CreateDefaults {
  depth: number
  maxSteps: number
  maxToolCallsPerStep: number
  maxQueuedModelCalls: number
}

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
  protected readonly ceiling: RootCeiling
  protected readonly budgetHandlers: BudgetHandlers
  private readonly observers = new Observers()
  protected readonly continueHooks: ContinueHooks
  protected readonly hookSettings: HookSettings
  /** The gate around model calls; undefined when no cap is configured. */
  readonly modelGate?: ModelGate
  /** The runtime's seam, one plain object shared by every agent it builds (each call names its agent: an `Agent` of this runtime). */
  private readonly seam: AgentHost
  private rootView?: ToolView

  protected constructor(ctx: Context, config: RuntimeConfig, private readonly defaults: CreateDefaults) {
    super(ctx, 'agents', true)
    this.config = config
    this.registry = withoutCallerTracing(ctx.tools)
    const logger = ctx.logger('agents')
    const warn = (format: string, ...args: unknown[]) => logger.warn(format, ...args)
    this.continueHooks = new ContinueHooks(warn)
    this.budgetHandlers = new BudgetHandlers(warn)
    this.hookSettings = new HookSettings(warn)
    this.modelGate = ModelGate.create({
      maxInFlight: config.maxModelCallsInFlight,
      models: config.models,
      maxQueued: config.maxQueuedModelCalls ?? defaults.maxQueuedModelCalls,
      rateLimit: config.rateLimit,
      maxPerSecond: config.maxModelCallsPerSecond,
    })
    // Agents call back into the runtime every step: they get this plain object, not the caller-tracing proxy `this` may be.
    this.seam = {
      resolveModel: (ref) => this.resolveModel(ref),
      modelGate: this.modelGate,
      budgetReached: (agent, breach) => this.budgetHandlers.size ? this.budgetHandlers.reached(agent as Agent, breach) : false,
      // Without observers or hooks the loop pays one size check, and enters neither file.
      watch: (agent, prompt, resumed) => this.observers.size ? this.observers.watch(agent as Agent, prompt, resumed) : undefined,
      stopBefore: (agent, step) => this.continueHooks.size ? this.continueHooks.ask(agent as Agent, step) : undefined,
      // Until a hook or a sink is set anywhere, a leg pays one field read here and builds nothing.
      hookRun: (agent, turn, abort) => this.hookSettings.used ? this.hookSettings.run(agent, turn, abort) : undefined,
    }
    const configProblem = budgetProblem(config.budget, 'agents config budget')
    if (configProblem) throw new AgentError('INVALID_OPTIONS', configProblem)
    // What a parent host of ours passed in SUBAGENT_* (the crossing, @cordis-subagents/shared): read here only.
    const root = readRootCrossing({ depth: config.depth ?? defaults.depth, budget: config.budget }, (problem) => logger.warn('ignoring %s', problem))
    this.rootCrossing = root.crossing
    this.rootDepth = root.rootDepth
    this.rootLimits = root.rootLimits
    this.ceiling = root.ceiling
  }

  /**
   * Adds an observer of every run of this runtime's agents: runs, model calls and tool calls as
   * they start and end (see `AgentObserver`). Scoped to the caller. Without observers a run pays
   * one check per run and per call.
   */
  observe(observer: AgentObserver): () => void {
    if (!observer || typeof observer !== 'object') throw new AgentError('INVALID_OPTIONS', 'observe() takes an observer object ({ runStart?, modelCallStart?, ... }).')
    return this.ctx.effect(() => this.observers.add(observer))
  }

  /** How many observers are attached (0: runs report to no one). */
  get observerCount(): number {
    return this.observers.size
  }

  /** A root agent's tools: the given view (else every tool), under the bound ceiling. */
  private rootTools(tools: ToolView | undefined): ToolView {
    // A root without tools of its own sees the registry through one live view, made once (views are immutable windows).
    const view = tools ?? (this.rootView ??= this.registry.view())
    return this.ceiling.tools ? this.ceiling.apply(view) : view
  }

  modelNames(): string[] {
    return [...this.models.keys()]
  }

  /** Finds the model behind a ref. An unknown ref yields an error text naming the registered models. */
  resolveModel(ref: string | undefined): { model: ChatModel; name: string; modelId?: string } | { error: string } {
    ref ||= this.config.model
    // The list of names is built only for a ref that does not name a model (every model call resolves one).
    if (!ref) {
      const names = this.modelNames()
      if (names.length === 1) return { model: this.models.get(names[0])!, name: names[0] }
      return { error: `No model was named and no default is configured. Registered models: ${names.join(', ') || '(none)'}.` }
    }
    const colon = ref.indexOf(':')
    const name = colon < 0 ? ref : ref.slice(0, colon)
    const model = this.models.get(name)
    if (!model) return { error: `Unknown model "${ref}". Registered models: ${this.modelNames().join(', ') || '(none)'}.` }
    return colon < 0 ? { model, name } : { model, name, modelId: ref.slice(colon + 1) }
  }

  /**
   * A new agent, or (with `restore`: what `agent.checkpoint()` returned, as JSON) the agent a
   * checkpoint holds, rebuilt with its id, settings, transcript, tallies and parked turn.
   */
  create(options: CreateAgentOptions = {}): Agent {
    checkOptions(options)
    const { parent } = options
    if (parent !== undefined && !(parent instanceof Agent)) {
      throw new AgentError('INVALID_OPTIONS', 'options.parent must be an Agent created by ctx.agents.')
    }
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

const ROLES = new Set(['user', 'assistant', 'tool'])

/** Catches misuse at `create`, where it is easy to trace, rather than as an odd failure mid-run. */
function checkOptions(options: CreateAgentOptions): void {
  if (options === null || typeof options !== 'object') {
    throw new AgentError('INVALID_OPTIONS', 'create() takes an options object.')
  }
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
  if (tools !== undefined && !isToolView(tools)) {
    throw new AgentError('INVALID_OPTIONS', 'options.tools must be a ToolView (ctx.tools.view(), or a view\'s restrict()); pass a filter through restrict.')
  }
  // Another transcript's completed() was validated when its messages were appended.
  if (seed !== undefined && !isFrozenHistory(seed)) {
    if (!Array.isArray(seed)) throw new AgentError('INVALID_OPTIONS', 'options.seed must be an array of transcript messages.')
    seed.forEach((message, i) => {
      if (!message || !ROLES.has(message.role) || typeof message.content !== 'string') {
        throw new AgentError('INVALID_OPTIONS', `options.seed[${i}] is not a transcript message ({ role: 'user' | 'assistant' | 'tool', content: string }).`)
      }
    })
  }
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
    for (const observer of this.observers) {
      try { observer.modelCallStart?.(this.agent, step, model) } catch { /* ignored */ }
    }
  }

  modelEnd(step: number, response: GenerateResponse | undefined, error?: unknown, aborted = false): void {
    for (const observer of this.observers) {
      try { observer.modelCallEnd?.(this.agent, step, response, error, aborted) } catch { /* ignored */ }
    }
  }

  toolStart(step: number, call: ModelToolCall): void {
    for (const observer of this.observers) {
      try { observer.toolCallStart?.(this.agent, step, call) } catch { /* ignored */ }
    }
  }

  toolEnd(step: number, call: ModelToolCall, result: ToolResult): void {
    for (const observer of this.observers) {
      try { observer.toolCallEnd?.(this.agent, step, call, result) } catch { /* ignored */ }
    }
  }

  end(result: RunResult): void {
    for (const observer of this.observers) {
      try { observer.runEnd?.(this.agent, result) } catch { /* ignored */ }
    }
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
