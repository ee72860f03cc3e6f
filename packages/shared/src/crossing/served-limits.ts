// How a serving host (serve-acp, serve-a2a, serve-mcp) applies a parent's crossing to the agent it
// serves: one rule for the depth, the depth ceiling and the budget, whatever the protocol.

import { type Crossing, type CrossingBudget, depthRefusal, strictestCrossing } from './crossing.js'
import type { CrossingAids } from './aids.js'

/** The limits of a root run a serving host applies (the runtime's budget limits, by the same names). */
export interface ServedBudget extends CrossingBudget {
  maxConcurrent?: number
  maxDepth?: number
}

/** The lowest of each limit any of `all` sets ("take the lowest budget"; an absent or undefined limit claims nothing). */
export function lowestLimits<T extends object>(...all: Array<T | undefined>): T {
  const out: Record<string, number> = {}
  for (const limits of all) {
    if (!limits) continue
    for (const [key, value] of Object.entries(limits) as Array<[string, unknown]>) {
      if (typeof value === 'number') out[key] = Math.min(out[key] ?? Infinity, value)
    }
  }
  return out as T
}

/** What the agent served for one request (an ACP session, an A2A task, an MCP session) is held to. */
export interface ServedLimits {
  /** Its depth in its delegation tree: the deepest any source claims, never shallower than the host's root depth. */
  depth: number
  /** Set when that depth is deeper than the ceiling allows: the request is refused. */
  refusal?: { depth: number; ceiling: number }
  /** Its root limits beyond what the host's runtime applies from the root crossing (`maxDepth` counted from the root depth). */
  budget?: ServedBudget
  /** The request's tool ceiling (the root crossing's is bound by the runtime itself). */
  allowedTools?: string[]
  /** What the request's parent gives the agent (a budget note, `tell_parent`); the request's own, never the process's. */
  aids?: CrossingAids
}

/** Where a serving host stands: the crossing of its own process (read once by `ctx.agents`) and the depth of its root agents. */
export interface ServingHost {
  rootCrossing: Crossing
  rootDepth: number
}

/** A serving host's own bounds (its config): a parent's lower ones win. */
export interface ServedBounds {
  maxDepth?: number
  budget?: ServedBudget
}

/**
 * The limits of an agent served for a request that carried `request` (its `_meta` / metadata crossing).
 * The depth ceiling is the lowest of the root crossing's, the request's and the host's own; the agent is
 * created at the host's root depth, so its children's ceiling is re-based onto it:
 * `maxDepth = rootDepth + (ceiling - depth)`, which counts them at their true depth in the tree.
 */
export function servedLimits(host: ServingHost, request: Crossing, own: ServedBounds = {}): ServedLimits {
  const crossing = strictestCrossing(host.rootCrossing, request, { depth: host.rootDepth })
  const depth = crossing.depth ?? host.rootDepth
  const limits: ServedLimits = { depth }
  const refusal = depthRefusal({ ...crossing, depth }, own.maxDepth)
  if (refusal) limits.refusal = refusal
  // The root crossing's budget is applied by the runtime to every root agent; the request's comes on top.
  const budget = lowestLimits<ServedBudget>(own.budget, request.budget)
  const ceiling = Math.min(crossing.maxDepth ?? Infinity, own.maxDepth ?? Infinity)
  if (ceiling !== Infinity) budget.maxDepth = host.rootDepth + Math.max(0, ceiling - depth)
  if (Object.keys(budget).length) limits.budget = budget
  if (request.allowedTools) limits.allowedTools = request.allowedTools
  if (request.aids) limits.aids = request.aids
  return limits
}
