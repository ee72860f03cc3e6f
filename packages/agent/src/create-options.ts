import { Schema } from 'cordis'
import { count, isCount } from '@cordis-subagents/shared'
import type { Tool, ToolView } from '@cordis-subagents/tools'
import { type Budget, BUDGET_KEYS } from './budget.js'
import { AgentError } from './errors.js'
import { checkCheckpoint } from './checkpoint-check.js'
import type { AgentCheckpoint } from './checkpoint.js'
import type { Agent, AgentInit } from './agent.js'
import type { BudgetLimits, Message } from './types.js'
import type { Transcript } from './transcript.js'
import { type OutputOptions, outputContract } from './output.js'
import type { AgentHooks, MetricSink } from './hooks.js'
import type { BudgetNoteOptions } from './budget-note.js'
import type { TellDelivery, TellParentOptions } from './tell-parent.js'
import type { RateLimitConfig } from './rate-limit.js'

// What `ctx.agents` is configured with and `create` takes; the checks a plain `create` never enters
// (a checkpoint to restore, a budget of plain limits). create.ts checks the rest.

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
  /** What the agent starts with: another agent's transcript (its completed turns now, not copied), or messages (completed turns). */
  seed?: readonly Message[] | Transcript
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
   * With `restore` and `parent`: `parent` stands in for the parent the agent had, which is gone (its host restarted),
   * so the agent keeps the checkpoint's depth (or `parent.depth + 1` when that is deeper: never shallower than either)
   * instead of having to be exactly `parent.depth + 1`. Without it a depth that does not fit `parent` is `INVALID_OPTIONS`.
   */
  standIn?: boolean
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
  /** With `parent` (or `tellTo`): give the agent a bounded `tell_parent` tool (README, "tell_parent"). */
  tellParent?: boolean | TellParentOptions
  /**
   * Where a root agent's `tell_parent` messages go, its parent being elsewhere (a serving host sends them back over its
   * protocol; README, "tell_parent"). Added after the root's tool ceiling: the tool is the agent's own, not the parent's.
   */
  tellTo?: TellDelivery
  /**
   * Tools that are the agent's own, not the parent's (a serving host's ask tool, a client's MCP servers' tools): added
   * after the tool ceiling and `forDepth`, so neither removes them (README, `create(options)`).
   */
  ownTools?: readonly Tool<any>[]
  /** A typed result: every run's answer must match this JSON Schema (README, "Typed results"); else `INVALID_OUTPUT_SCHEMA`. */
  output?: OutputOptions
}

/** `ctx.agents`' config (`AgentRuntime.Config`; the schema: runtime.ts). */
export interface RuntimeConfig {
  model?: string
  persona?: string
  maxSteps?: number
  maxTokens?: number
  cwd?: string
  depth?: number
  maxToolCallsPerStep?: number
  budget?: BudgetLimits
  maxModelCallsInFlight?: number
  maxModelCallsPerSecond?: number
  models?: Record<string, { maxInFlight?: number }>
  maxQueuedModelCalls?: number
  rateLimit?: RateLimitConfig
}

/** The options `restore` may come with: the rest is what the checkpoint holds. */
const WITH_RESTORE = new Set([
  'restore', 'parent', 'standIn', 'tools', 'budget', 'hooks', 'metrics', 'budgetNote', 'tellParent', 'tellTo', 'ownTools',
])

/**
 * The checkpoint of `create({ restore })`, checked, and the depth the agent gets; `INVALID_OPTIONS` for an option it
 * cannot come with or a depth that does not fit the parent (unless the parent stands in for one that is gone).
 */
function checkRestoreOptions(options: CreateAgentOptions): { checkpoint: AgentCheckpoint; depth: number } {
  const extra = Object.keys(options).filter((key) => options[key as keyof CreateAgentOptions] !== undefined && !WITH_RESTORE.has(key))
  if (extra.length) {
    throw new AgentError('INVALID_OPTIONS', 'options.restore comes with only parent, standIn, tools, budget, hooks, metrics, budgetNote, '
      + `tellParent, tellTo and ownTools; the checkpoint holds the rest (drop ${extra.join(', ')}).`)
  }
  const checkpoint = checkCheckpoint(options.restore)
  const { parent, standIn } = options
  if (standIn !== undefined && (typeof standIn !== 'boolean' || (standIn && !parent))) {
    throw new AgentError('INVALID_OPTIONS', 'options.standIn is true or false, and true only with options.parent (the agent that stands in '
      + `for the restored agent's parent), got ${JSON.stringify(standIn)}${parent ? '' : ' without a parent'}.`)
  }
  if (!parent) return { checkpoint, depth: checkpoint.depth }
  // A stand-in parent (the agent's own is gone): the stored depth holds, never less than the new parent's child depth.
  if (standIn) return { checkpoint, depth: Math.max(checkpoint.depth, parent.depth + 1) }
  if (parent.depth + 1 !== checkpoint.depth) {
    const problem = `options.restore.depth is ${checkpoint.depth} but the parent's child depth is ${parent.depth + 1}`
    throw new AgentError('INVALID_OPTIONS', `${problem}; restore the agent under the parent it had, or pass standIn: true when that parent `
      + 'is gone (e.g. after a restart).')
  }
  return { checkpoint, depth: checkpoint.depth }
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

/**
 * What `create({ restore })` builds the agent from: the checkpoint, checked, as an agent's settings
 * (its tools and budget are set by `build`). `minted` hears the checkpoint id's number, so the
 * runtime mints no id twice.
 */
export function restoredInit(options: CreateAgentOptions, minted: (n: number) => void): AgentInit {
  const { checkpoint, depth } = checkRestoreOptions(options)
  const number = /-(\d+)$/.exec(checkpoint.id)
  if (number && Number.isSafeInteger(Number(number[1]))) minted(Number(number[1]))
  const { v: _, messages, usage: __, work: ___, parked: ____, output, ...settings } = checkpoint
  // Its output schema passes the same checks as a new one: a schema that no longer does fails the restore.
  const contract = output === undefined ? undefined : outputContract(output, 'options.restore.output')
  return { ...settings, depth, output: contract, seed: messages, restore: checkpoint, tools: undefined as unknown as ToolView }
}

/** The schema defaults `create` falls back to (the runtime's config schema holds them). */
export interface CreateDefaults {
  depth: number
  maxSteps: number
  maxToolCallsPerStep: number
  maxQueuedModelCalls: number
}
