import { reportedCount } from '@cordis-subagents/shared'
import type { SubagentResult } from '@cordis-subagents/subagents-service'

export type Usage = NonNullable<SubagentResult['usage']>

/** A token count we accept from an agent: a non-negative safe integer, clamped to MAX_REPORTED_COUNT. */
const count = reportedCount

/**
 * ACP's (unstable) `Usage`, as sent in `PromptResponse.usage`: cumulative over the session,
 * which is this run's only session. Mapped to ours: `inputTokens`, `outputTokens`, and
 * `cachedReadTokens` as `cachedInputTokens`. `thoughtTokens` and `cachedWriteTokens` have no
 * field of ours (reasoning is output; cache writes are input already counted). Returns a reason
 * instead when the value is unusable.
 */
export function readAcpUsage(raw: unknown): Usage | string {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return 'not an object'
  const record = raw as Record<string, unknown>
  const inputTokens = count(record.inputTokens)
  const outputTokens = count(record.outputTokens)
  if (inputTokens === undefined || outputTokens === undefined) {
    return `inputTokens/outputTokens must be non-negative safe integers (got ${describe(record.inputTokens)}, ${describe(record.outputTokens)})`
  }
  const usage: Usage = { inputTokens, outputTokens }
  if (record.cachedReadTokens !== undefined && record.cachedReadTokens !== null) {
    const cached = count(record.cachedReadTokens)
    if (cached === undefined) return `cachedReadTokens must be a non-negative safe integer (got ${describe(record.cachedReadTokens)})`
    // A subset of the input by definition; an agent claiming more is capped, not believed.
    usage.cachedInputTokens = Math.min(cached, inputTokens)
  }
  return usage
}

/**
 * ACP's `usage_update` session update carries the context window (`used` tokens in context,
 * `size` of the window) and an optional cost, not tokens spent. Tokens in the context were all
 * read or written by the model at least once, so `used` is a lower bound of the tokens spent so
 * far: returned as a number, or a reason when unusable.
 */
export function readContextUsed(update: unknown): number | string {
  if (!update || typeof update !== 'object') return 'not an object'
  const used = count((update as Record<string, unknown>).used)
  return used ?? `used must be a non-negative safe integer (got ${describe((update as Record<string, unknown>).used)})`
}

/**
 * The run's cumulative usage. Token usage from the agent (`PromptResponse.usage`, or a token
 * `Usage` an agent puts in a `usage_update`'s `_meta.usage`) wins; until one arrives, the
 * largest context occupancy seen stands in as a lower bound, counted as input tokens. No field
 * ever decreases (a context compaction does not give tokens back, and a budget charging the
 * growth must never see a negative step), so a floor above the agent's own figure stays.
 */
export class UsageTracker {
  private reported?: Usage
  private contextFloor = 0
  private last?: Usage

  /** Tokens from the agent; returns the new cumulative usage when it grew. */
  tokens(usage: Usage): Usage | undefined {
    this.reported = this.reported ? maxUsage(this.reported, usage) : { ...usage }
    return this.advance()
  }

  /** A context occupancy from `usage_update`; returns the new cumulative usage when it grew. */
  context(used: number): Usage | undefined {
    this.contextFloor = Math.max(this.contextFloor, used)
    return this.advance()
  }

  current(): Usage | undefined {
    return this.last && { ...this.last }
  }

  private advance(): Usage | undefined {
    const candidate = this.reported ?? (this.contextFloor > 0 ? { inputTokens: this.contextFloor, outputTokens: 0 } : undefined)
    if (!candidate) return undefined
    const next = this.last ? maxUsage(this.last, candidate) : { ...candidate }
    const grew = !this.last || next.inputTokens !== this.last.inputTokens || next.outputTokens !== this.last.outputTokens
      || next.cachedInputTokens !== this.last.cachedInputTokens
    this.last = next
    return grew ? { ...next } : undefined
  }
}

function maxUsage(a: Usage, b: Usage): Usage {
  const usage: Usage = { inputTokens: Math.max(a.inputTokens, b.inputTokens), outputTokens: Math.max(a.outputTokens, b.outputTokens) }
  if (a.cachedInputTokens !== undefined || b.cachedInputTokens !== undefined) {
    usage.cachedInputTokens = Math.max(a.cachedInputTokens ?? 0, b.cachedInputTokens ?? 0)
  }
  return usage
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value)
  if (value === undefined) return 'nothing'
  return typeof value
}
