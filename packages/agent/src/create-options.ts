import { Schema } from 'cordis'
import { count, countProblem, isCount } from '@cordis-subagents/shared'
import type { ToolView } from '@cordis-subagents/tools'
import { isFrozenHistory } from './transcript.js'
import { Budget, BUDGET_KEYS, type BudgetLimits } from './budget.js'
import { AgentError } from './errors.js'
import { checkCheckpoint } from './checkpoint-check.js'
import type { AgentCheckpoint } from './checkpoint.js'
import type { Agent } from './agent.js'
import type { Message } from './types.js'
import type { OutputOptions } from './output.js'
import { type AgentHooks, hooksProblem, type MetricSink, sinkProblem } from './hooks.js'
import { budgetNoteProblem, type BudgetNoteOptions } from './budget-note.js'
import { tellParentProblem, type TellParentOptions } from './tell-parent.js'

// What `ctx.agents.create` takes, and checks before it builds an agent.

export interface CreateAgentOptions {
  /** Model ref `name` or `name:modelId`. Default: the parent's model, else the configured default. */
  model?: string
  /** System prompt. Default: the configured deployment persona (not the parent's persona). */
  persona?: string
  /**
   * The tools the agent may call. Default: the parent's view, else every registered tool. An agent
   * at depth 1 or more gets it through `forDepth(depth)`: tools with a lower `maxCallerDepth` are hidden.
   */
  tools?: ToolView
  parent?: Agent
  /** Messages the agent starts with (completed turns). */
  seed?: readonly Message[]
  cwd?: string
  maxSteps?: number
  maxTokens?: number
  label?: string
  /** Most tool calls of one step that run (default: the runtime's `maxToolCallsPerStep`). */
  maxToolCallsPerStep?: number
  /** Most messages waiting in its inbox (default `MAX_INBOX_MESSAGES`, 1,024); a poster past it gets `INBOX_FULL`. */
  maxInboxMessages?: number
  /**
   * Limits of this agent's runs and everything below them, or a budget already carved for it
   * (what a provider passes for a child). A root agent's limits are min(these, the runtime's `budget`).
   */
  budget?: BudgetLimits | Budget
  /**
   * Rebuilds the agent a checkpoint holds (`agent.checkpoint()`, possibly read back from a
   * database): same id, settings, transcript, tallies, parked turn. Only `parent`, `tools` and
   * `budget` may be given with it. Checked strictly: `INVALID_OPTIONS` names what is wrong.
   */
  restore?: AgentCheckpoint
  /**
   * Lifecycle hooks of this agent's runs, replacing the runtime's set whole (never merged: a set
   * with one hook has only that one); `null`: none, whatever the runtime has. Undefined: the
   * runtime's (`ctx.agents.hooks`). Never inherited from `parent`.
   */
  hooks?: AgentHooks | null
  /** A metric sink of this agent's runs, replacing the runtime's (`ctx.agents.metrics`); `null`: none. Never inherited from `parent`. */
  metrics?: MetricSink | null
  /** Show the model its remaining budget in a note after its system prompt, rebuilt each step (README, "Budgets the child can see"). */
  budgetNote?: boolean | BudgetNoteOptions
  /** With `parent`: give the agent a bounded `tell_parent` tool (README, "tell_parent"). */
  tellParent?: boolean | TellParentOptions
  /** A typed result: every run's answer must match this JSON Schema (README, "Typed results"); else `INVALID_OUTPUT_SCHEMA`. */
  output?: OutputOptions
}

const ROLES = new Set(['user', 'assistant', 'tool'])

/** Catches misuse at `create`, where it is easy to trace, rather than as an odd failure mid-run. */
export function checkOptions(options: CreateAgentOptions): void {
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

/** The options `restore` may come with: the rest is what the checkpoint holds. */
const WITH_RESTORE = new Set(['restore', 'parent', 'tools', 'budget', 'hooks', 'metrics'])

/**
 * The checkpoint of `create({ restore })`, checked; `INVALID_OPTIONS` for an option it cannot come
 * with or a depth that does not fit the parent.
 */
export function checkRestoreOptions(options: CreateAgentOptions): AgentCheckpoint {
  const extra = Object.keys(options).filter((key) => options[key as keyof CreateAgentOptions] !== undefined && !WITH_RESTORE.has(key))
  if (extra.length) {
    throw new AgentError('INVALID_OPTIONS', `options.restore comes with only parent, tools, budget, hooks and metrics; the checkpoint holds the rest (drop ${extra.join(', ')}).`)
  }
  const checkpoint = checkCheckpoint(options.restore)
  const { parent } = options
  if (parent && parent.depth + 1 !== checkpoint.depth) {
    throw new AgentError('INVALID_OPTIONS', `options.restore.depth is ${checkpoint.depth} but the parent's child depth is ${parent.depth + 1}; restore the agent under the parent it had.`)
  }
  return checkpoint
}

/** Checks user-supplied limits: each a non-negative safe integer when present. Returns a problem or undefined. */
export function budgetProblem(limits: unknown, where: string): string | undefined {
  if (limits === undefined) return undefined
  if (limits === null || typeof limits !== 'object' || Array.isArray(limits)) return `${where} must be an object of limits.`
  for (const [key, value] of Object.entries(limits)) {
    if (value === undefined) continue
    if (!(BUDGET_KEYS as readonly string[]).includes(key)) {
      return `${where} has an unknown key "${key}"; budgets are ${BUDGET_KEYS.join(', ')}.`
    }
    if (!isCount(value)) {
      return `${where}.${key} must be a non-negative integer, got ${String(value)}.`
    }
    // No run could ever work under 0 concurrent runs: every start would wait forever.
    if (key === 'maxConcurrent' && value < 1) return `${where}.maxConcurrent must be at least 1, got ${value}.`
  }
  return undefined
}

/** The schema of a budget in a config (the runtime's `budget`). */
export function budgetSchema(): Schema<BudgetLimits> {
  const limit = (text: string) => count().description(text)
  return Schema.object({
    maxSteps: limit('Model calls of the whole tree.'),
    maxTokens: limit('Tokens (input + output) of the whole tree.'),
    maxToolCalls: limit('Tool calls of the whole tree.'),
    maxWallMs: limit('Wall time of a root run, children included (ms).'),
    maxChildren: limit('Delegations in the whole tree (the subagents service caps it too).'),
    maxConcurrent: count({ min: 1 }).description('Delegated runs working at once in the tree (the subagents service caps it too).'),
    maxDepth: limit('Deepest child depth (the subagents service caps it too).'),
  })
}
