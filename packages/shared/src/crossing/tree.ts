// The crossing a delegating parent writes for a child elsewhere (provider-acp, provider-a2a), built
// from the provider's start request: the writers take it from here, not from the service package.

import { isName } from '../vocabulary/names.js'
import { isCount } from '../vocabulary/usage.js'
import { CROSSING_BUDGET_KEYS, type Crossing, MAX_ALLOWED_TOOLS } from './crossing.js'
import { aidsOf } from './aids.js'

/** What of a provider's start request the crossing is built from (the subagents service's `ProviderStartRequest` has it). */
export interface CrossingSource {
  /** The child's depth. */
  depth: number
  /** The deepest depth allowed in the tree. */
  maxDepthCeiling?: number
  /** The child's carved budget: what is left of it crosses. */
  budget?: { remaining?(): Partial<Record<string, number>> }
  /** The delegating agent: its tool view's names are the ceiling. */
  parent?: unknown
  /** What the child is made with: its `budgetNote` and `tellParent` cross as `aids`. */
  agentOptions?: { budgetNote?: unknown; tellParent?: unknown }
}

/**
 * What a provider whose child runs in another process (ACP, A2A) passes about the delegating tree,
 * so a child host of ours keeps one depth ceiling, one budget and one tool ceiling:
 * - `depth`: the child's depth;
 * - `maxDepth`: the deepest depth allowed in this tree (`request.maxDepthCeiling`);
 * - `budget`: what is left of the child's carved budget, finite limits only (the child reports its
 *   spend back as it goes, and it is charged to this tree);
 * - `allowedTools`: the tools the parent may use (sorted, unique, at most `MAX_ALLOWED_TOOLS`);
 *   absent when the caller has no tool view (then no ceiling is claimed);
 * - `aids`: the request's `budgetNote` / `tellParent` (a served child of ours honours them; others ignore them).
 * Trace context is not included: each transport carries it its own way.
 */
export type TreeCrossing = Crossing & { depth: number }

export function treeCrossing(request: CrossingSource): TreeCrossing {
  const crossing: TreeCrossing = { depth: request.depth }
  const ceiling = request.maxDepthCeiling
  if (isCount(ceiling)) crossing.maxDepth = ceiling
  const remaining = typeof request.budget?.remaining === 'function' ? request.budget.remaining() : undefined
  if (remaining) {
    const budget: Record<string, number> = {}
    for (const key of CROSSING_BUDGET_KEYS) {
      const value = remaining[key]
      if (value !== undefined && Number.isFinite(value)) budget[key] = Math.max(0, Math.floor(value))
    }
    if (Object.keys(budget).length) crossing.budget = budget
  }
  const tools = parentToolNames(request.parent)
  if (tools) crossing.allowedTools = tools
  const aids = aidsOf(request.agentOptions)
  if (aids) crossing.aids = aids
  return crossing
}

function parentToolNames(parent: unknown): string[] | undefined {
  const tools = (parent as { tools?: { list?: () => Array<{ name?: unknown }> } } | undefined)?.tools
  if (!tools || typeof tools.list !== 'function') return undefined
  let names: string[]
  try {
    names = tools.list().map((tool) => tool?.name).filter((name): name is string => isName(name))
  } catch {
    return undefined
  }
  return [...new Set(names)].sort().slice(0, MAX_ALLOWED_TOOLS)
}
