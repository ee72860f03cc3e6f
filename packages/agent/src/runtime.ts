import { resolve } from 'node:path'
import { Context, Schema, Service } from 'cordis'
import { count, countProblem, type Crossing, lowestLimits, type ServedLimits, servedLimits } from '@cordis-subagents/shared'
import { type ToolRegistry, type ToolView } from '@cordis-subagents/tools'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { Agent, type AgentHost, type AgentInit } from './agent.js'
import { budgetProblem, budgetSchema, checkOptions, checkRestoreOptions, type CreateAgentOptions } from './create-options.js'
import { Budget, type BudgetLimits } from './budget.js'
import { AgentError } from './errors.js'
import { type AgentObserver, Observers } from './observers.js'
import { BudgetHandlers, type BudgetEvent, type ContinueHook, ContinueHooks } from './continue-hooks.js'
import { HookSettings } from './hook-run.js'
import type { AgentHooks, MetricSink } from './hooks.js'
import { ModelGate } from './model-gate.js'
import { outputContract } from './output.js'
import { type RateLimitConfig, rateLimitSchema } from './rate-limit.js'
import type { RootCeiling } from './root-ceiling.js'
import { readRootCrossing } from './root-crossing.js'
import { noteBudget } from './budget-note.js'
import { tellParentTool } from './tell-parent.js'
import { createServedAgent, type ServedAgentOptions, type ServeRequest } from './served.js'
import type { ChatModel } from './types.js'

declare module 'cordis' {
  interface Context {
    agents: AgentRuntime
  }
}

const MODEL_NAME = /^[A-Za-z0-9_.\-/]{1,64}$/

/**
 * `ctx.agents`: chat models and agents that run the tool-calling loop over `ctx.tools`.
 */
export class AgentRuntime extends Service<AgentRuntime.Config> {
  static inject = ['tools']
  static Config: Schema<AgentRuntime.Config> = Schema.object({
    model: Schema.string().description('Default model ref (`name` or `name:modelId`) for agents that do not name one.'),
    persona: Schema.string().role('textarea').description('Deployment persona: the system prompt of every agent created without its own persona (a child does not inherit its parent\'s persona).'),
    maxSteps: count({ min: 1 }).default(25).description('Most model calls in one turn before it stops with `max-steps`.'),
    maxTokens: count({ min: 1 }).description('Output token limit passed to the model per call.'),
    cwd: Schema.string().description('Working directory of root agents (default: the process cwd).'),
    depth: count().default(0).description('Depth of root agents. The `SUBAGENT_DEPTH` environment variable overrides it.'),
    maxToolCallsPerStep: count({ min: 1 }).default(32).description('Most tool calls of one model step that are kept and run; the rest are dropped and answered by one note the model reads.'),
    budget: budgetSchema().description('Limits of every root run and its whole delegation tree (omitted: none of its own; the subagents service still caps depth and delegations). `SUBAGENT_BUDGET` (set by a parent host over ACP) lowers them.'),
    maxModelCallsInFlight: count({ min: 1 }).description('Model calls in flight at once across every run of this runtime (all root runs and their trees); the others wait FIFO. Omitted: no process-wide cap.'),
    models: Schema.dict(Schema.object({
      maxInFlight: count({ min: 1 }).description('Calls of this model in flight at once (e.g. to respect its provider\'s rate limit).'),
    }), Schema.string().pattern(MODEL_NAME)).description('Per model name (as registered, without `:modelId`): caps of that model\'s calls.'),
    maxQueuedModelCalls: count({ min: 1 }).default(10_000).description('Model calls that may wait at one cap; past it a run ends `error` (MODEL_GATE_FULL).'),
    rateLimit: rateLimitSchema(),
  })

  private readonly models = new Map<string, ChatModel>()
  /** Captured once: callers of `create` need not inject `tools` themselves. */
  private readonly registry: ToolRegistry
  private counter = 0
  /** What a parent host of ours passed in `SUBAGENT_*` (depth, ceiling, budget), read once; its tool ceiling: `rootCeiling`. */
  readonly rootCrossing: Crossing
  /** Depth of agents created without a parent. */
  readonly rootDepth: number
  /** Limits of root runs: the config's, lowered by what a parent host passed in `SUBAGENT_BUDGET`. */
  readonly rootLimits: BudgetLimits
  private readonly ceiling: RootCeiling
  private readonly budgetHandlers: BudgetHandlers
  private readonly observers = new Observers()
  private readonly continueHooks: ContinueHooks
  private readonly hookSettings: HookSettings
  /** The gate around model calls; undefined when no cap is configured. */
  readonly modelGate?: ModelGate

  constructor(ctx: Context, config: AgentRuntime.Config = {}) {
    super(ctx, 'agents', true)
    this.config = config
    this.registry = withoutCallerTracing(ctx.tools)
    // Agents call back into the runtime every step; give them the runtime itself, not the
    // caller-tracing proxy that `this` is inside a method called as `ctx.agents.create()`.
    const logger = ctx.logger('agents')
    this.continueHooks = new ContinueHooks((format, ...args) => logger.warn(format, ...args))
    this.budgetHandlers = new BudgetHandlers((format, ...args) => logger.warn(format, ...args))
    this.hookSettings = new HookSettings((format, ...args) => logger.warn(format, ...args))
    this.modelGate = ModelGate.create({
      maxInFlight: config.maxModelCallsInFlight,
      models: config.models,
      maxQueued: config.maxQueuedModelCalls ?? DEFAULTS.maxQueuedModelCalls!,
      rateLimit: config.rateLimit,
    })
    this.seam = this.makeSeam()
    const configProblem = budgetProblem(config.budget, 'agents config budget')
    if (configProblem) throw new AgentError('INVALID_OPTIONS', configProblem)
    // What a parent host of ours passed in SUBAGENT_* (the crossing, @cordis-subagents/shared): read here only.
    const warn = (problem: string) => logger.warn('ignoring %s', problem)
    const root = readRootCrossing({ depth: config.depth ?? DEFAULTS.depth!, budget: config.budget }, warn)
    this.rootCrossing = root.crossing
    this.rootDepth = root.rootDepth
    this.rootLimits = root.rootLimits
    this.ceiling = root.ceiling
  }

  /** What an agent a serving host creates for one request is held to (shared `servedLimits`); `refusal`: too deep. */
  servedLimits(request: ServeRequest = {}): ServedLimits {
    return servedLimits(this, request.crossing ?? {}, { maxDepth: request.maxDepth, budget: request.budget })
  }

  /** The agent served for one request, under `limits` (from `servedLimits`): the one way serving hosts create it. */
  createServed(limits: ServedLimits, options: ServedAgentOptions): Agent {
    return createServedAgent((create) => this.create(create), limits, options)
  }

  /** A parent host's tool ceiling (`SUBAGENT_ALLOWED_TOOLS`) once bound: every root agent created from then on is under it. */
  get rootCeiling(): readonly string[] | undefined {
    return this.ceiling.tools
  }

  /** Binds that ceiling when `nonce` is its `SUBAGENT_CROSSING_FOR` (serve-acp: the parent's `initialize`); whether one applies now. */
  bindCrossing(nonce: unknown): boolean {
    return this.ceiling.bind(nonce)
  }

  /** A root agent's tools: the given view (else every tool), under the bound ceiling. */
  private rootTools(tools: ToolView | undefined): ToolView {
    // A root without tools of its own sees the registry through one live view, made once (views are immutable windows).
    const view = tools ?? (this.rootView ??= this.registry.view())
    return this.ceiling.tools ? this.ceiling.apply(view) : view
  }
  private rootView?: ToolView

  /**
   * Adds a handler called (isolated: a throwing handler is logged and ignored) whenever a run
   * reaches a budget; it may call `event.extend(n)` to let the run go on. Scoped to the caller.
   */
  onBudget(handler: (event: BudgetEvent) => void): () => void {
    if (typeof handler !== 'function') throw new AgentError('INVALID_OPTIONS', 'onBudget() takes a function.')
    return this.ctx.effect(() => this.budgetHandlers.add(handler))
  }

  /**
   * Adds a hook asked before every model call of every run of this runtime's agents (children
   * included), with `{ agent, step, spent, treeSpent, remaining }`. It returns `false` or
   * `{ stop: reason }` to end the run with `budget` (the diagnostic names the policy and the
   * reason), anything else to go on. Synchronous and isolated: one that throws is logged and
   * counts as "go on". Scoped to the caller. Without hooks a model call pays one size check.
   */
  shouldContinue(hook: ContinueHook): () => void {
    if (typeof hook !== 'function') throw new AgentError('INVALID_OPTIONS', 'shouldContinue() takes a function.')
    return this.ctx.effect(() => this.continueHooks.add(hook))
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

  /**
   * Sets the hooks of every agent without a set of its own (`create({ hooks })` replaces it whole; `hooks: null`: none).
   * One set at a time (`DUPLICATE_HOOKS`), scoped to the caller. See the README's "Hooks and metrics".
   */
  hooks(hooks: AgentHooks): () => void {
    return this.ctx.effect(this.hookSettings.setter('hooks', hooks))
  }

  /** Sets the metric sink of every agent without one of its own (`create({ metrics })`); same rules as `hooks`. */
  metrics(sink: MetricSink): () => void {
    return this.ctx.effect(this.hookSettings.setter('sink', sink))
  }

  /** How many observers are attached (0: runs report to no one). */
  get observerCount(): number {
    return this.observers.size
  }

  /**
   * The runtime's seam, one plain object shared by every agent it builds (the loop reads it every
   * step; each call names its agent, which is always an `Agent` this runtime built). Made once the
   * model gate exists (constructor).
   */
  private readonly seam: AgentHost

  private makeSeam(): AgentHost {
    return {
      resolveModel: (ref) => this.resolveModel(ref),
      modelGate: this.modelGate,
      budgetReached: (agent, breach) => this.budgetHandlers.size ? this.budgetHandlers.reached(agent as Agent, breach) : false,
      // Without observers or hooks the loop pays one size check, and enters neither file.
      watch: (agent, prompt, resumed) => this.observers.size ? this.observers.watch(agent as Agent, prompt, resumed) : undefined,
      stopBefore: (agent, step) => this.continueHooks.size ? this.continueHooks.ask(agent as Agent, step) : undefined,
      // Until a hook or a sink is set anywhere, a leg pays one field read here and builds nothing.
      hookRun: (agent, turn, abort) => this.hookSettings.used ? this.hookSettings.run(agent, turn, abort) : undefined,
    }
  }

  /** Registers a model in the caller's scope. Throws `INVALID_MODEL` or `DUPLICATE_MODEL`. */
  registerModel(name: string, model: ChatModel): () => void {
    if (typeof name !== 'string' || !MODEL_NAME.test(name)) {
      throw new AgentError('INVALID_MODEL', `Invalid model name ${JSON.stringify(name)}: use 1-64 of A-Z a-z 0-9 _ . - / (no colon).`)
    }
    if (!model || typeof model.generate !== 'function') {
      throw new AgentError('INVALID_MODEL', `Model "${name}" must have a generate() method.`)
    }
    return this.ctx.effect(() => {
      if (this.models.has(name)) {
        throw new AgentError('DUPLICATE_MODEL', `A model named "${name}" is already registered; give this one another name.`)
      }
      this.models.set(name, model)
      return () => {
        if (this.models.get(name) === model) this.models.delete(name)
      }
    })
  }

  modelNames(): string[] {
    return [...this.models.keys()]
  }

  /** Finds the model behind a ref. An unknown ref yields an error text naming the registered models. */
  resolveModel(ref: string | undefined): { model: ChatModel; name: string; modelId?: string } | { error: string } {
    ref ||= this.config.model
    const names = this.modelNames()
    if (!ref) {
      if (names.length === 1) return { model: this.models.get(names[0])!, name: names[0] }
      return { error: `No model was named and no default is configured. Registered models: ${names.join(', ') || '(none)'}.` }
    }
    const colon = ref.indexOf(':')
    const name = colon < 0 ? ref : ref.slice(0, colon)
    const model = this.models.get(name)
    if (!model) return { error: `Unknown model "${ref}". Registered models: ${names.join(', ') || '(none)'}.` }
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
    if (options.restore !== undefined) return this.restore(options)
    const maxSteps = options.maxSteps ?? this.config.maxSteps ?? DEFAULTS.maxSteps!
    const maxToolCallsPerStep = options.maxToolCallsPerStep ?? this.config.maxToolCallsPerStep ?? DEFAULTS.maxToolCallsPerStep!
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

  private restore(options: CreateAgentOptions): Agent {
    const checkpoint = checkRestoreOptions(options)
    // Ids minted from now on skip the restored one (ids are `<label>-<n>` with one counter per runtime).
    const minted = /-(\d+)$/.exec(checkpoint.id)
    if (minted && Number.isSafeInteger(Number(minted[1]))) this.counter = Math.max(this.counter, Number(minted[1]))
    const { v: _, messages, usage: __, work: ___, parked: ____, ...settings } = checkpoint
    return this.build(options, { ...settings, seed: messages, restore: checkpoint, tools: UNSET_TOOLS })
  }

  /**
   * The agent, given what `create` or `restore` resolved (`init`, a fresh object of theirs, gets its
   * tools and budget here, from the options and the parent: assigned, not spread into a copy).
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
    if (parent && options.tellParent) init.tools = init.tools.with(tellParentTool(options.tellParent))
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

/** The schema's defaults: the one place they are written (a programmatic `new AgentRuntime(ctx, {})` gets the same). */
const DEFAULTS = AgentRuntime.Config({})

export namespace AgentRuntime {
  export interface Config {
    model?: string
    persona?: string
    maxSteps?: number
    maxTokens?: number
    cwd?: string
    depth?: number
    maxToolCallsPerStep?: number
    budget?: BudgetLimits
    maxModelCallsInFlight?: number
    models?: Record<string, { maxInFlight?: number }>
    maxQueuedModelCalls?: number
    rateLimit?: RateLimitConfig
  }
}

