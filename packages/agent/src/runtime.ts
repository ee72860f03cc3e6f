import { Context, Schema } from 'cordis'
import { count, type ServedLimits, servedLimits, withoutCallerTracing } from '@cordis-subagents/shared'
import type { Agent } from './agent.js'
import { budgetProblem, budgetSchema, type CreateDefaults, type RuntimeConfig } from './create-options.js'
import { AgentFactory, type RuntimeParts } from './create.js'
import { AgentError } from './errors.js'
import { type BudgetEvent, BudgetHandlers, type ContinueHook, ContinueHooks } from './continue-hooks.js'
import { HookSettings } from './hook-run.js'
import type { AgentHooks, MetricSink } from './hooks.js'
import { ModelGate } from './model-gate.js'
import type { AgentObserver } from './observers.js'
import { readRootCrossing } from './root-crossing.js'
import { rateLimitSchema } from './rate-limit.js'
import { createServedAgent, type ServedAgentOptions, type ServeRequest } from './served.js'
import type { ChatModel } from './types.js'
import { configuredCwd } from './working-directory.js'

declare module 'cordis' {
  interface Context {
    agents: AgentRuntime
  }
}

const MODEL_NAME = /^[A-Za-z0-9_.\-/]{1,64}$/

/**
 * `ctx.agents`: chat models and agents that run the tool-calling loop over `ctx.tools`.
 */
export class AgentRuntime extends AgentFactory {
  static inject = ['tools']
  static Config: Schema<AgentRuntime.Config> = Schema.object({
    model: Schema.string().description('Default model ref (`name` or `name:modelId`) for agents that do not name one.'),
    persona: Schema.string().role('textarea').description('Deployment persona: the system prompt of every agent created without its own persona (a child does not inherit its parent\'s persona).'),
    maxSteps: count({ min: 1 }).default(25).description('Most model calls in one turn before it stops with `max-steps`.'),
    maxTokens: count({ min: 1 }).description('Output token limit passed to the model per call.'),
    cwd: Schema.string().description('Working directory of root agents, which their children inherit: absolute, or relative to '
      + 'the app directory (`ctx.baseDir`). It must exist; checked at load. Default: the process cwd.'),
    depth: count().default(0).description('Depth of root agents. The `SUBAGENT_DEPTH` environment variable overrides it.'),
    maxToolCallsPerStep: count({ min: 1 }).default(32).description('Most tool calls of one model step that are kept and run; the rest are dropped and answered by one note the model reads.'),
    budget: budgetSchema().description('Limits of every root run and its whole delegation tree (omitted: none of its own; the subagents service still caps depth and delegations). `SUBAGENT_BUDGET` (set by a parent host over ACP) lowers them.'),
    maxModelCallsInFlight: count({ min: 1 }).description('Model calls in flight at once across every run of this runtime (all root runs and their trees); the others wait FIFO. Omitted: no process-wide cap.'),
    maxModelCallsPerSecond: Schema.number().min(0.01).max(100_000).description('Model calls that start in any second, per endpoint (one model\'s API): calls start at least 1/N s apart in arrival order, also after a 429/503 pause (paced, never all at once). Omitted: no rate of its own.'),
    models: Schema.dict(Schema.object({
      maxInFlight: count({ min: 1 }).description('Calls of this model in flight at once (e.g. to respect its provider\'s rate limit).'),
    }), Schema.string().pattern(MODEL_NAME)).description('Per model name (as registered, without `:modelId`): caps of that model\'s calls.'),
    maxQueuedModelCalls: count({ min: 1 }).default(10_000).description('Model calls that may wait at one cap; past it a run ends `error` (MODEL_GATE_FULL).'),
    rateLimit: rateLimitSchema(),
  })

  /** The gate around model calls; undefined when no cap is configured. */
  declare readonly modelGate?: ModelGate

  constructor(ctx: Context, config: AgentRuntime.Config = {}) {
    super(ctx, config, CREATE_DEFAULTS, runtimeParts)
  }

  /** What an agent a serving host creates for one request is held to (shared `servedLimits`); `refusal`: too deep. */
  servedLimits(request: ServeRequest = {}): ServedLimits {
    return servedLimits(this, request.crossing ?? {}, { maxDepth: request.maxDepth, budget: request.budget })
  }

  /** The agent served for one request, under `limits` (from `servedLimits`): the one way serving hosts create it. */
  createServed(limits: ServedLimits, options: ServedAgentOptions): Agent {
    return createServedAgent((create) => this.create(create), limits, options)
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

  modelNames(): string[] {
    return [...this.models.keys()]
  }

  /** A parent host's tool ceiling (`SUBAGENT_ALLOWED_TOOLS`) once bound: every root agent created from then on is under it. */
  get rootCeiling(): readonly string[] | undefined {
    return this.ceiling.tools
  }

  /** Binds that ceiling when `nonce` is its `SUBAGENT_CROSSING_FOR` (serve-acp: the parent's `initialize`); whether one applies now. */
  bindCrossing(nonce: unknown): boolean {
    return this.ceiling.bind(nonce)
  }

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
}

/** The schema's defaults: the one place they are written (a programmatic `new AgentRuntime(ctx, {})` gets the same). */
const DEFAULTS = AgentRuntime.Config({})
const CREATE_DEFAULTS = {
  depth: DEFAULTS.depth!,
  maxSteps: DEFAULTS.maxSteps!,
  maxToolCallsPerStep: DEFAULTS.maxToolCallsPerStep!,
  maxQueuedModelCalls: DEFAULTS.maxQueuedModelCalls!,
}

/** What `create` and the seam use, made once at registration (in the order the runtime always made them). */
function runtimeParts(ctx: Context, config: RuntimeConfig, defaults: CreateDefaults): RuntimeParts {
  const registry = withoutCallerTracing(ctx.tools)
  const logger = ctx.logger('agents')
  const warn = (format: string, ...args: unknown[]) => logger.warn(format, ...args)
  const modelGate = ModelGate.create({
    maxInFlight: config.maxModelCallsInFlight,
    models: config.models,
    maxQueued: config.maxQueuedModelCalls ?? defaults.maxQueuedModelCalls,
    rateLimit: config.rateLimit,
    maxPerSecond: config.maxModelCallsPerSecond,
  })
  const rootOf = () => {
    const configProblem = budgetProblem(config.budget, 'agents config budget')
    if (configProblem) throw new AgentError('INVALID_OPTIONS', configProblem)
    // What a parent host of ours passed in SUBAGENT_* (the crossing, @cordis-subagents/shared): read here only.
    return readRootCrossing({ depth: config.depth ?? defaults.depth, budget: config.budget }, (problem) => logger.warn('ignoring %s', problem))
  }
  const continueHooks = new ContinueHooks(warn)
  const budgetHandlers = new BudgetHandlers(warn)
  // Relative paths resolve against the app directory, as in every plugin of ours; the configured one is checked here, once.
  const baseDir = ctx.baseDir || process.cwd()
  const rootCwd = configuredCwd(config.cwd, baseDir)
  return { registry, continueHooks, budgetHandlers, hookSettings: new HookSettings(warn), modelGate, rootOf, baseDir, rootCwd }
}

export namespace AgentRuntime {
  export type Config = RuntimeConfig
}
