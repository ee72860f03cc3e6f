import type { BudgetSpend, RunResult } from '@cordis-subagents/agent'
import { addCounts, type SpendReport, spendValue } from '@cordis-subagents/shared'

// A task's spend as the status updates carry it (the crossing up); the reporter that coalesces it is the crossing's SpendReporter.

/** A running spend figure as a report (`delegations` are the budget's `children`). */
export function reportOf(spent: Readonly<BudgetSpend>): SpendReport {
  return { tokens: spent.tokens, steps: spent.steps, toolCalls: spent.toolCalls, delegations: spent.children }
}

/** The whole tree's spend at the end: the last reported counts (never less than the run's own), with the run's usage. */
export function finalSpend(result: RunResult, last: Readonly<BudgetSpend> | undefined): Record<string, unknown> {
  const { own, delegated } = result.work
  const usage = { inputTokens: result.usage.inputTokens, outputTokens: result.usage.outputTokens,
    ...result.usage.cachedInputTokens === undefined ? {} : { cachedInputTokens: result.usage.cachedInputTokens } }
  return spendValue({
    tokens: Math.max(last?.tokens ?? 0, addCounts(usage.inputTokens, usage.outputTokens)),
    steps: Math.max(last?.steps ?? 0, addCounts(own.steps, delegated.steps)),
    toolCalls: Math.max(last?.toolCalls ?? 0, addCounts(own.toolCalls, delegated.toolCalls)),
    delegations: Math.max(last?.children ?? 0, addCounts(own.delegations, delegated.delegations)),
    usage,
  })
}

