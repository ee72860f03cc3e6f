import type { BudgetSpend, RunResult } from '@cordis-subagents/agent'
import { addCounts, spendValue } from '@cordis-subagents/shared'

/**
 * Coalesces the run's spend (called synchronously after every charge) into at most one report per
 * event-loop turn; the newest spend always wins, and the final status carries the last one.
 */
export class SpendReporter {
  last?: Readonly<BudgetSpend>
  private pending?: NodeJS.Immediate

  constructor(private readonly send: (value: Record<string, unknown>) => void) {}

  report(spent: Readonly<BudgetSpend>): void {
    this.last = { ...spent }
    this.pending ??= setImmediate(() => {
      this.pending = undefined
      if (this.last) this.send(spendValue(spendOf(this.last)))
    })
  }

  /** Sends what is pending now (the last report is never dropped), then stops. */
  stop(): void {
    if (!this.pending) return
    clearImmediate(this.pending)
    this.pending = undefined
    if (this.last) this.send(spendValue(spendOf(this.last)))
  }
}

function spendOf(spent: Readonly<BudgetSpend>) {
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

