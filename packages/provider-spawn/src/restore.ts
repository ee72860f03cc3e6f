import type { Agent, AgentCheckpoint, AgentRuntime, Budget, BudgetLimits } from '@cordis-subagents/agent'
import { isCount, isName, isObject, isRecord, type ToolFilter } from '@cordis-subagents/shared'
import { type ProviderStartRequest, type RunRecord, SubagentError, type SubagentRun } from '@cordis-subagents/subagents-service'
import type { ToolView } from '@cordis-subagents/tools'
import { CEILING_LIMITS, type ChildCeiling } from './child-checkpoint.js'

// `restore(record, request)` after a restart: the child rebuilt from its stored checkpoint below the request's parent,
// which stands in for the parent it had (gone with the old process: after `resume` by run id a fresh root agent of the
// host). The child keeps its stored depth, and the ceiling it was started under (ceiling in the checkpoint).

/** Most tool names a stored ceiling may list (a registry holds far fewer; the store caps the whole checkpoint too). */
const MAX_CEILING_TOOLS = 4096

/** Starts the run (the provider's `startChild`) with the child `create` makes from the view it is given. */
type Start = (request: ProviderStartRequest, create: (tools: ToolView) => Agent) => Promise<SubagentRun>

/**
 * The stored run as a live one. Its tools: the request's parent's view, narrowed by the request's filter and by the
 * stored ceiling's tools; its budget: the service's carve for it, narrowed by what its tree had left when the
 * checkpoint was taken. A checkpoint without a ceiling (stored before it was kept) gets the request's view and carve.
 */
export function restoreChild(agents: AgentRuntime, provider: string, record: RunRecord, request: ProviderStartRequest, start: Start) {
  let ceiling: ChildCeiling | undefined
  try {
    ceiling = storedCeiling(record, provider)
  } catch (error) {
    return Promise.reject(error)
  }
  const restore = record.checkpoint as AgentCheckpoint
  // The narrowed filter is the run's own from now on: a continue of it, and its next checkpoint, keep it.
  const next = ceiling ? { ...request, toolFilter: { allow: allowed(ceiling.tools, request.toolFilter) } } : request
  const budget = ceiling?.budget ? narrowed(request.budget, ceiling.budget) : request.budget
  const { parent } = request
  return start(next, (tools) => agents.create({ restore, parent, standIn: true, tools, ...budget ? { budget } : {} }))
}

/** The stored names `filter` lets through. */
function allowed(names: readonly string[], filter: ToolFilter | undefined): string[] {
  if (!filter) return [...names]
  const allow = filter.allow && new Set(filter.allow)
  const deny = new Set(filter.deny ?? [])
  return names.filter((name) => (!allow || allow.has(name)) && !deny.has(name))
}

/**
 * The service's carve narrowed to what was left: a budget carved below it (spend is charged up through it as before),
 * which the child spends from itself, like the carve it replaces (so the service does not watch the carve's wall time).
 */
function narrowed(carved: Budget | undefined, left: BudgetLimits): Budget | BudgetLimits {
  if (!carved) return left
  carved.adopt()
  return carved.child(left)
}

/**
 * The ceiling in a stored checkpoint, checked (it comes from a database): undefined when there is none. A damaged one is
 * refused rather than read as none, which would give the child every tool and an unbounded budget.
 */
function storedCeiling(record: RunRecord, provider: string): ChildCeiling | undefined {
  const stored = record.checkpoint
  // Not an object: the agent runtime's checks of the checkpoint refuse it, naming the field.
  if (!isObject(stored) || stored.ceiling === undefined) return undefined
  const damaged = (what: string): never => {
    throw new SubagentError('PROVIDER_START_FAILED', `Subagent provider "${provider}" cannot restore run ${record.runId}: its stored `
      + `checkpoint's ${what}, so the tools and budget it was started under are unknown and it is not restored. The record `
      + 'was not written by this provider, or was changed since; delegate the task again as a new run.')
  }
  const given = stored.ceiling
  if (!isRecord(given)) return damaged('ceiling is not an object { tools, budget? }')
  const { tools, budget } = given
  if (!Array.isArray(tools) || tools.length > MAX_CEILING_TOOLS || !tools.every((name) => typeof name === 'string' && isName(name))) {
    return damaged(`ceiling.tools is not a list of at most ${MAX_CEILING_TOOLS} tool names`)
  }
  const ceiling: ChildCeiling = { tools: tools as string[] }
  if (budget === undefined) return ceiling
  if (!isRecord(budget)) return damaged('ceiling.budget is not an object of limits')
  const limits: BudgetLimits = {}
  for (const [key, value] of Object.entries(budget)) {
    const known = (CEILING_LIMITS as readonly string[]).includes(key)
    if (!known) return damaged(`ceiling.budget has an unknown key "${key}" (it keeps ${CEILING_LIMITS.join(', ')})`)
    if (!isCount(value)) return damaged(`ceiling.budget.${key} is not a non-negative integer`)
    limits[key as typeof CEILING_LIMITS[number]] = value
  }
  ceiling.budget = limits
  return ceiling
}
