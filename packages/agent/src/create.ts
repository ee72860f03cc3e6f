import { resolve } from 'node:path'
import { type Context, Service } from 'cordis'
import { countProblem, type Crossing, lowestLimits } from '@cordis-subagents/shared'
import type { ToolRegistry, ToolView } from '@cordis-subagents/tools'
import { Agent, type AgentInit } from './agent.js'
import { Budget } from './budget.js'
import { budgetProblem, type CreateAgentOptions, type CreateDefaults, restoredInit, type RuntimeConfig } from './create-options.js'
import { AgentError } from './errors.js'
import type { BudgetHandlers, ContinueHooks } from './continue-hooks.js'
import type { HookSettings } from './hook-run.js'
import { hooksProblem, sinkProblem } from './hooks.js'
import { outputContract } from './output.js'
import type { RootCrossing } from './root-crossing.js'
import { noteBudget, budgetNoteProblem } from './budget-note.js'
import { tellParentProblem, tellParentTool } from './tell-parent.js'
import { seedProblem } from './history.js'
import { Transcript } from './transcript.js'
import { type CountedGate, Observers, resolveModelIn, RuntimeSeam } from './seam.js'
import type { BudgetLimits, ChatModel } from './types.js'

// The part of `ctx.agents` one delegation runs through to build its child: `create` (its options checked, its settings
// resolved, the agent built). What every agent it builds calls back into at each step (models, the gate's counted path,
// the observers' watch of a run) is the seam: seam.ts. Registration, serving and the config schema: runtime.ts.

/** What the runtime (runtime.ts) makes once, at registration, for `create` and the seam. */
export interface RuntimeParts {
  registry: ToolRegistry
  continueHooks: ContinueHooks
  budgetHandlers: BudgetHandlers
  hookSettings: HookSettings
  modelGate?: CountedGate
  /** The config's budget checked, then the crossing read (after the seam is made, as it always was). */
  rootOf(): RootCrossing
  /** The app directory (`ctx.baseDir`): a relative `cwd` option resolves against it. */
  baseDir: string
  /** The configured `cwd`, absolute and checked at load (working-directory.ts); undefined: the process cwd. */
  rootCwd?: string
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
  private readonly seam: RuntimeSeam
  private rootView?: ToolView
  private readonly baseDir: string
  private readonly rootCwd?: string

  protected constructor(ctx: Context, config: RuntimeConfig, private readonly defaults: CreateDefaults, makeParts: MakeParts) {
    super(ctx, 'agents', true)
    this.config = config
    const { registry, continueHooks, budgetHandlers, hookSettings, modelGate, rootOf, baseDir, rootCwd } = makeParts(ctx, config, defaults)
    this.registry = registry; this.modelGate = modelGate; this.baseDir = baseDir; this.rootCwd = rootCwd
    this.continueHooks = continueHooks; this.budgetHandlers = budgetHandlers; this.hookSettings = hookSettings
    // Agents call back into the runtime every step: they get the seam (seam.ts), not the caller-tracing proxy `this` may be.
    this.seam = new RuntimeSeam(this.models, config, { modelGate, observers: this.observers, budgetHandlers, continueHooks, hookSettings })
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
    return resolveModelIn(this.models, this.config.model, ref)
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
      // A parent's cwd and the configured one (checked at load) are already absolute; no file system work here.
      cwd: options.cwd !== undefined ? resolve(this.baseDir, options.cwd) : parent ? parent.cwd : this.rootCwd ?? process.cwd(),
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
