import { type Crossing, type ServedLimits } from '@cordis-subagents/shared'
import type { Tool, ToolView } from '@cordis-subagents/tools'
import type { Agent } from './agent.js'
import type { BudgetNoteOptions } from './budget-note.js'
import type { TellDelivery, TellParentOptions } from './tell-parent.js'
import type { BudgetLimits } from './types.js'
import type { AgentCheckpoint } from './checkpoint.js'
import type { Message } from './types.js'

/** What a serving host (serve-acp, serve-a2a, serve-mcp) is held to beyond `ctx.agents`' root crossing. */
export interface ServeRequest {
  /** The crossing the request carried (ACP session/new `_meta`, A2A message metadata); none for MCP. */
  crossing?: Crossing
  /** The host's own depth ceiling: a request deeper than it is refused. */
  maxDepth?: number
  /** The host's own limits of each served root run (a parent's remaining budget lowers them). */
  budget?: BudgetLimits
}

/** How to create the agent served for one request, under the limits `ctx.agents.servedLimits` gave. */
export interface ServedAgentOptions {
  label: string
  /** The host's tools (its config's filter); the request's tool ceiling is applied to them. */
  tools: ToolView
  /** The host's own tools, added after the ceiling (an ask tool the client answers: not one of the parent's tools). */
  ownTools?: readonly Tool<any>[]
  model?: string
  /** `{depth}` is replaced by the depth the request runs at. */
  persona?: string
  cwd?: string
  seed?: readonly Message[]
  /** Rebuilds the agent of a checkpoint (an A2A task another host saved) under these limits. */
  restore?: AgentCheckpoint
  /**
   * Where the agent's `tell_parent` messages go (back over the host's protocol). With it, a request whose crossing
   * asks for `tellParent` gives the agent the tool, under the crossing's bounds; without it, the request's ask is ignored.
   */
  tell?: TellDelivery
}

/** The runtime's `create`, as far as a served agent uses it. */
type Create = (options: {
  label?: string; tools?: ToolView; model?: string; persona?: string; cwd?: string
  seed?: readonly Message[]; budget?: BudgetLimits; restore?: AgentCheckpoint
  budgetNote?: BudgetNoteOptions; tellParent?: TellParentOptions; tellTo?: TellDelivery; ownTools?: readonly Tool<any>[]
}) => Agent

/**
 * The served agent: a root agent of this runtime, under the request's tool ceiling and limits, with the aids its
 * parent asked for (`limits.aids`: a budget note of the limits it runs under, a `tell_parent` tool through `options.tell`).
 */
export function createServedAgent(create: Create, limits: ServedLimits, options: ServedAgentOptions): Agent {
  const tools = limits.allowedTools ? options.tools.restrict({ allow: limits.allowedTools }) : options.tools
  // The host's own tools, like `tell_parent`, go on after the request's ceiling and the root's (the environment's):
  // they are not the parent's tools, which are all the ceilings bound.
  const own = options.ownTools?.length ? { ownTools: options.ownTools } : {}
  const { tellParent, budgetNote } = limits.aids ?? {}
  const budget = limits.budget as BudgetLimits | undefined
  // The tool goes on after the root's tool ceiling (`tellTo`): it is the agent's own, not one of the parent's.
  const noted = { ...own, ...budgetNote ? { budgetNote } : {}, ...tellParent && options.tell ? { tellParent, tellTo: options.tell } : {} }
  if (options.restore) return create({ restore: options.restore, tools, ...budget ? { budget } : {}, ...noted })
  return create({
    ...noted,
    label: options.label,
    tools,
    ...options.model ? { model: options.model } : {},
    ...options.persona ? { persona: options.persona.replaceAll('{depth}', String(limits.depth)) } : {},
    ...options.cwd === undefined ? {} : { cwd: options.cwd },
    ...options.seed ? { seed: options.seed } : {},
    ...budget ? { budget } : {},
  })
}
