import { type Crossing, crossingFromMeta, crossingTrace, depthRefusal, strictestCrossing, traceContextFrom, type TraceContextHeaders } from '@cordis-subagents/shared'
import type { BudgetLimits } from '@cordis-subagents/agent'
import type { Config } from './config.js'

/** What a session is held to: the process's crossing (env), the session's (`_meta`) and this server's config. */
export interface SessionLimits {
  /** The session's depth: the deepest any source claims (never shallower than ctx.agents' root depth). */
  depth: number
  /** Set when the session is deeper than allowed: the depth and the ceiling. */
  refusal?: { depth: number; ceiling: number }
  /** Budget of each prompt turn, beyond what ctx.agents already applies from the env. */
  budget?: BudgetLimits
  /** The `_meta` tool ceiling (the env one is applied by ctx.agents to every root agent). */
  allowedTools?: string[]
  /** The trace context session/new carried. */
  trace?: TraceContextHeaders
}

/**
 * `env` is the crossing of this process's environment; `rootDepth` is ctx.agents' depth of root
 * agents (SUBAGENT_DEPTH, else its config). A session deeper than ctx.agents' root depth (a
 * pooled process serving a deeper delegation) has its agents' depth ceiling lowered by the
 * difference, so its children are counted at their true depth.
 */
export function sessionLimits(meta: unknown, env: Crossing, rootDepth: number, config: Pick<Config, 'maxDepth' | 'budget'>): SessionLimits {
  const own = crossingFromMeta(meta)
  const crossing = strictestCrossing(env, own, { depth: rootDepth })
  const depth = crossing.depth ?? rootDepth
  const ceiling = Math.min(crossing.maxDepth ?? Infinity, config.maxDepth)
  const limits: SessionLimits = { depth }
  const refusal = depthRefusal({ ...crossing, depth }, config.maxDepth)
  if (refusal) limits.refusal = refusal
  const budget: BudgetLimits = lowest(config.budget, own.budget)
  // The agent is created at rootDepth; its children must stop at `ceiling` counted from `depth`.
  if (ceiling !== Infinity) budget.maxDepth = Math.max(0, ceiling - (depth - rootDepth))
  if (Object.keys(budget).length) limits.budget = budget
  if (own.allowedTools) limits.allowedTools = own.allowedTools
  const trace = traceContextFrom(meta) ?? crossingTrace(own)
  if (trace) limits.trace = trace
  return limits
}

/** The trace context of a session/prompt's `_meta` (top level, else in the crossing). */
export function promptTrace(meta: unknown): TraceContextHeaders | undefined {
  return traceContextFrom(meta) ?? crossingTrace(crossingFromMeta(meta))
}

function lowest(...all: Array<Partial<BudgetLimits> | undefined>): BudgetLimits {
  const out: BudgetLimits = {}
  for (const limits of all) {
    if (!limits) continue
    for (const [key, value] of Object.entries(limits) as Array<[keyof BudgetLimits, number | undefined]>) {
      if (value !== undefined) out[key] = Math.min(out[key] ?? Infinity, value)
    }
  }
  return out
}
