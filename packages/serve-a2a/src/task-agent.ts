import { type Agent, type AgentCheckpoint, type AgentRuntime, askParentTool, type BudgetLimits } from '@cordis-subagents/agent'
import { type Crossing, CROSSING_BUDGET_KEYS } from '@cordis-subagents/shared'
import type { ToolRegistry } from '@cordis-subagents/tools'
import type { BudgetConfig, Config } from './config.js'

/**
 * The agent of one task: the configured model, persona (`{depth}` replaced), cwd, tools under
 * the parent's tool ceiling (plus the ask tool with `askParent`: the client answers it), and the
 * root limits the config and the parent's crossing allow.
 */
export function createTaskAgent(host: { agents: AgentRuntime; tools: ToolRegistry; config: Config }, crossing: Crossing): Agent {
  const { config } = host
  return host.agents.create({
    label: 'a2a',
    model: config.model,
    // `{depth}` in the persona: how deep in its delegation tree this task runs (the parent says; else this host's root depth).
    persona: config.persona?.replaceAll('{depth}', String(crossing.depth ?? host.agents.rootDepth)),
    cwd: config.cwd,
    tools: toolsFor(host, crossing),
    budget: budgetFor(host, crossing),
  })
}

/** The configured tools, under the parent's tool ceiling (an intersection: never more than either). */
function toolsFor(host: { tools: ToolRegistry; config: Config }, crossing: Crossing) {
  const { tools } = host.config
  // The schema fills an absent list with []: an empty list is "not given", not "nothing".
  const filter = { ...tools?.allow?.length ? { allow: tools.allow } : {}, ...tools?.deny?.length ? { deny: tools.deny } : {} }
  let view = host.tools.view(Object.keys(filter).length ? filter : undefined)
  if (crossing.allowedTools) view = view.restrict({ allow: crossing.allowedTools })
  // The ask tool is this server's own, answered by the client: not one of the parent's tools its ceiling names.
  if (host.config.askParent) view = view.with(askParentTool({ name: host.config.askParentTool }))
  return view
}

/**
 * The task's root limits: the configured budget lowered by the parent's remaining budget, and the
 * depth ceiling counted from here (a root run here is `rootDepth`; the parent said how deep it is).
 */
function budgetFor(host: { agents: AgentRuntime; config: Config }, crossing: Crossing): BudgetLimits | undefined {
  const limits: BudgetLimits = lowest(host.config.budget, crossing.budget)
  const ceiling = Math.min(crossing.maxDepth ?? Infinity, host.config.maxDepth ?? Infinity)
  if (ceiling !== Infinity) {
    const depth = crossing.depth ?? host.agents.rootDepth
    limits.maxDepth = host.agents.rootDepth + Math.max(0, ceiling - depth)
  }
  return Object.keys(limits).length ? limits : undefined
}

function lowest(config: BudgetConfig | undefined, given: Crossing['budget']): BudgetLimits {
  const limits: BudgetLimits = {}
  for (const key of CROSSING_BUDGET_KEYS) {
    const values = [config?.[key], given?.[key]].filter((value): value is number => value !== undefined)
    if (values.length) limits[key] = Math.min(...values)
  }
  return limits
}

/** The agent of a task another host saved (its checkpoint), rebuilt here with the same crossing's tools and limits. */
export function restoreTaskAgent(
  host: { agents: AgentRuntime; tools: ToolRegistry; config: Config }, crossing: Crossing, checkpoint: AgentCheckpoint,
): Agent {
  const budget = budgetFor(host, crossing)
  return host.agents.create({ restore: checkpoint, tools: toolsFor(host, crossing), ...budget ? { budget } : {} })
}
