import type { Budget } from '@cordis-subagents/agent'
import { SubagentError } from '../errors.js'
import { type BudgetBreach, describeBreach } from '@cordis-subagents/shared'
import type { SubagentProvider, SubagentRequest } from '../types.js'

// The tree limits checked before a start: the depth ceiling, the parent's budget, the delegation count.

/** The parent's live budget, when it has one (agents of `ctx.agents` do). */
function budgetOf(parent: SubagentRequest['parent']): Budget | undefined {
  const budget = (parent as { budget?: unknown }).budget as Budget | undefined
  return budget && typeof budget.child === 'function' && typeof budget.check === 'function' ? budget : undefined
}

/** Where a child of the request's parent would stand in its tree. */
export interface TreePlace {
  depth: number
  parentBudget?: Budget
  /** The deepest depth allowed below this parent. */
  ceiling: number
}

/** A request that passed the service's checks: its place in the tree, its checked trace context, its provider. */
export interface Checked extends TreePlace {
  traceContext?: SubagentRequest['traceContext']
  provider: SubagentProvider
}

/** The child's depth, the parent's budget and the depth ceiling; `DEPTH_EXCEEDED` when the child would pass it. */
export function placeInTree(request: SubagentRequest, deploymentMaxDepth: number): TreePlace {
  const depth = request.parent.depth + 1
  const parentBudget = budgetOf(request.parent)
  const ceiling = depthCeiling(deploymentMaxDepth, request.maxDepth, parentBudget)
  if (depth > ceiling.max) {
    throw new SubagentError('DEPTH_EXCEEDED',
      `A child of "${request.parent.id}" would have depth ${depth}, more than ${ceiling.source} ${ceiling.max}; answer without delegating further.`,
      { attempted: depth, max: ceiling.max })
  }
  return { depth, parentBudget, ceiling: ceiling.max }
}

function depthCeiling(
  deployment: number, requested: number | undefined, budget: Budget | undefined,
): { max: number; source: string } {
  let ceiling = { max: deployment, source: 'the deployment\'s maxDepth' }
  if (requested !== undefined && requested < ceiling.max) ceiling = { max: requested, source: 'maxDepth' }
  const tree = budget?.limits.maxDepth
  if (tree !== undefined && tree < ceiling.max) ceiling = { max: tree, source: 'the tree budget\'s maxDepth' }
  return ceiling
}


/**
 * Refuses a start the parent's tree budget cannot pay for (`BUDGET_EXCEEDED`: its steps, tokens
 * or time are spent, or the tree started `maxChildren` delegations); otherwise counts the delegation.
 */
export function admitChild(budget: Budget, parentId: string, maxChildren: number): void {
  const spent = budget.overtime() ?? budget.check('steps', 1) ?? budget.check('tokens')
  if (spent) {
    throw new SubagentError('BUDGET_EXCEEDED',
      `"${parentId}" cannot delegate: ${describeBreach(spent)} is spent. Answer with what you have.`, { breach: spent })
  }
  const treeTotal = budget.root.spent.children
  const breach: BudgetBreach | undefined = budget.check('children', 1)
    ?? (treeTotal + 1 > maxChildren ? { budget: 'children', limit: maxChildren, spent: treeTotal } : undefined)
  if (breach) {
    throw new SubagentError('BUDGET_EXCEEDED',
      `"${parentId}" cannot delegate: ${describeBreach(breach)} is reached in this delegation tree. Do the rest yourself, or answer with what you have.`,
      { breach })
  }
  budget.charge('children', 1)
}
