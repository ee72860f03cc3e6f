import type { Usage } from './types.js'

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
