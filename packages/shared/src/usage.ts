import type { WorkCounts } from './limits.js'

/** Token accounting carried by model responses, tool results and subagent results. */
export interface Usage {
  inputTokens: number
  outputTokens: number
  /** Input tokens served from a provider-side cache (a subset of `inputTokens`). */
  cachedInputTokens?: number
}

/** A count from outside: a finite non-negative integer. */
export function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/** A count from outside (a tool result, a provider) as a number: itself when it is a count, else 0. */
export function countOf(value: unknown): number {
  return isCount(value) ? value : 0
}

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0 }
}

/** Adds `b` into a copy of `a`; `cachedInputTokens` is kept only when either side reports it. */
export function addUsage(a: Usage, b: Usage | undefined): Usage {
  if (!b) return a
  const sum: Usage = {
    inputTokens: a.inputTokens + (b.inputTokens || 0),
    outputTokens: a.outputTokens + (b.outputTokens || 0),
  }
  if (a.cachedInputTokens !== undefined || b.cachedInputTokens !== undefined) {
    sum.cachedInputTokens = (a.cachedInputTokens ?? 0) + (b.cachedInputTokens ?? 0)
  }
  return sum
}

export function totalTokens(usage: Usage): number {
  return usage.inputTokens + usage.outputTokens
}

/** A usage from outside whose counts are finite non-negative integers; anything else is undefined. */
export function checkedUsage(usage: unknown): Usage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined
  const { inputTokens, outputTokens, cachedInputTokens } = usage as Record<string, unknown>
  if (!isCount(inputTokens) || !isCount(outputTokens)) return undefined
  const checked: Usage = { inputTokens, outputTokens }
  if (isCount(cachedInputTokens)) checked.cachedInputTokens = cachedInputTokens
  return checked
}

/** Work counts from outside, each a non-negative integer (0 where missing or malformed). */
export function checkedWork(work: unknown): WorkCounts {
  const counts = (typeof work === 'object' && work !== null ? work : {}) as Record<string, unknown>
  return { steps: countOf(counts.steps), toolCalls: countOf(counts.toolCalls), delegations: countOf(counts.delegations) }
}
