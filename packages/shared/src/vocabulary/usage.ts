// Counts reported from outside, capped per report, and sums that saturate at `Number.MAX_SAFE_INTEGER` (budgets, usage
// and work tallies).

/** Token accounting carried by model responses, tool results and subagent results. */
export interface Usage {
  inputTokens: number
  outputTokens: number
  /** Input tokens served from a provider-side cache (a subset of `inputTokens`). */
  cachedInputTokens?: number
  /** Ms the model calls waited on a rate-limited endpoint's backoff (the model gate), apart from their work; summed over calls. */
  rateLimitWaitMs?: number
}

/**
 * The most one report from outside (a child elsewhere, a provider, a tool result) may claim of any
 * count: tokens, model calls, tool calls, delegations. A larger count is clamped to it, so a tree
 * summing reports stays far inside the safe integers; no real run comes near it.
 */
export const MAX_REPORTED_COUNT = 1_000_000_000_000

/** A count from outside: a finite non-negative integer. */
export function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/** A count from outside, clamped to MAX_REPORTED_COUNT; undefined when it is not a count (negative, fractional, unsafe, not a number). */
export function reportedCount(value: unknown): number | undefined {
  return isCount(value) ? Math.min(value, MAX_REPORTED_COUNT) : undefined
}

/** A count from outside (a tool result, a provider) as a number: itself (clamped) when it is a count, else 0. */
export function countOf(value: unknown): number {
  return reportedCount(value) ?? 0
}

/** a + b for counts, saturating at Number.MAX_SAFE_INTEGER (a sum never leaves the safe integers). */
export function addCounts(a: number, b: number): number {
  return Math.min(a + b, Number.MAX_SAFE_INTEGER)
}

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0 }
}

/** Adds `b` into a copy of `a`; `cachedInputTokens` and `rateLimitWaitMs` are kept only when either side reports them. */
export function addUsage(a: Usage, b: Usage | undefined): Usage {
  if (!b) return a
  const sum: Usage = {
    inputTokens: addCounts(a.inputTokens, b.inputTokens || 0),
    outputTokens: addCounts(a.outputTokens, b.outputTokens || 0),
  }
  if (a.cachedInputTokens !== undefined || b.cachedInputTokens !== undefined) {
    sum.cachedInputTokens = addCounts(a.cachedInputTokens ?? 0, b.cachedInputTokens ?? 0)
  }
  if (a.rateLimitWaitMs !== undefined || b.rateLimitWaitMs !== undefined) {
    sum.rateLimitWaitMs = addCounts(a.rateLimitWaitMs ?? 0, countOf(b.rateLimitWaitMs))
  }
  return sum
}

export function totalTokens(usage: Usage): number {
  return addCounts(usage.inputTokens, usage.outputTokens)
}

/** A usage from outside whose counts are finite non-negative integers (each clamped to MAX_REPORTED_COUNT); anything else is undefined. */
export function checkedUsage(usage: unknown): Usage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined
  const record = usage as Record<string, unknown>
  const inputTokens = reportedCount(record.inputTokens)
  const outputTokens = reportedCount(record.outputTokens)
  if (inputTokens === undefined || outputTokens === undefined) return undefined
  const checked: Usage = { inputTokens, outputTokens }
  const cached = reportedCount(record.cachedInputTokens)
  if (cached !== undefined) checked.cachedInputTokens = cached
  const waited = reportedCount(record.rateLimitWaitMs)
  if (waited !== undefined) checked.rateLimitWaitMs = waited
  return checked
}

/** Work counts from outside, each a non-negative integer clamped to MAX_REPORTED_COUNT (0 where missing or malformed). */
export function checkedWork(work: unknown): WorkCounts {
  const counts = (typeof work === 'object' && work !== null ? work : {}) as Record<string, unknown>
  return { steps: countOf(counts.steps), toolCalls: countOf(counts.toolCalls), delegations: countOf(counts.delegations) }
}

/** Work done, counted alongside tokens: model calls, tool calls and delegations started. */
export interface WorkCounts {
  steps: number
  toolCalls: number
  delegations: number
}

export function emptyWork(): WorkCounts {
  return { steps: 0, toolCalls: 0, delegations: 0 }
}

export function addWork(a: WorkCounts, b: Partial<WorkCounts> | undefined): WorkCounts {
  if (!b) return a
  return {
    steps: addCounts(a.steps, countOf(b.steps)),
    toolCalls: addCounts(a.toolCalls, countOf(b.toolCalls)),
    delegations: addCounts(a.delegations, countOf(b.delegations)),
  }
}
