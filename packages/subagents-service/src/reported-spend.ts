import type { Budget } from '@cordis-subagents/agent'
import { SubagentError } from './errors.js'
import { checkedWork, describeBreach } from '@cordis-subagents/shared'
import { tokensOf } from './run/outcome.js'
import type { SubagentResult, SubagentUpdate } from './types.js'
import { isObject } from './validate.js'

// What a child elsewhere (ACP, A2A) reports of its tree's spend, charged to the parent's tree.

/** Charges the growth of a child's reported running totals (tokens, steps, tool calls, delegations) to its budget. */
export function chargeReported(budget: Budget, usage: unknown, work: unknown): void {
  const tokens = tokensOf(usage as SubagentResult['usage'])
  if (tokens !== undefined) budget.chargeTokensUpTo(tokens)
  if (!isObject(work)) return
  const counts = checkedWork(work)
  budget.chargeUpTo('steps', counts.steps)
  budget.chargeUpTo('toolCalls', counts.toolCalls)
  budget.chargeUpTo('children', counts.delegations)
}

/**
 * The reason to stop a child elsewhere whose reported spend took the tree past a limit (at most the
 * call it had in flight is spent beyond it), or undefined. An in-process child checks its own
 * budget before each step, so only reported spend is judged.
 */
function overspent(budget: Budget): SubagentError | undefined {
  if (budget.spentInProcess) return undefined
  const breach = budget.exceeded()
  if (!breach) return undefined
  return new SubagentError('BUDGET_EXCEEDED', `Stopped: the delegation tree spent ${describeBreach(breach)}.`, { breach })
}

/** A `usage` update that reports neither tokens nor work (dropped: there is nothing in it). */
export function isEmptyUsage(update: SubagentUpdate): boolean {
  return tokensOf(update.usage) === undefined && !isObject(update.work)
}

/** Charges a `usage` update's running totals to `budget`; the reason to stop the run when they took the tree past a limit. */
export function chargeUsage(budget: Budget, update: SubagentUpdate): SubagentError | undefined {
  chargeReported(budget, update.usage, update.work)
  return overspent(budget)
}
