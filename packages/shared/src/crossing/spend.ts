// The spend half of the crossing (see crossing.ts): what a child that runs elsewhere reports up, as
// it goes, for its whole tree. Read as untrusted: each count is clamped to MAX_REPORTED_COUNT and
// sums saturate, so a hostile report can neither throw nor push a budget past the safe integers.
//   - ACP: `_meta.cordisSubagents` of a `usage_update` session update;
//   - A2A: `metadata.cordisSubagents` of a status update.

import { CROSSING_KEY } from './crossing.js'
import { isRecord } from '../vocabulary/records.js'
import { addCounts, reportedCount } from '../vocabulary/usage.js'

/**
 * Most tool names one progress update of a served child lists (A2A: `metadata.cordisSubagents.update.tools` of a status
 * update): serve-a2a names at most this many in one, provider-a2a reads at most this many from any remote.
 */
export const MAX_TOOLS_PER_UPDATE = 16

/** What a child reports up: cumulative over its run, for its whole tree (it and everything below). */
export interface SpendReport {
  /** Tokens spent (input + output). */
  tokens: number
  /** Model calls. */
  steps: number
  /** Tool calls. */
  toolCalls: number
  /** Delegations started. */
  delegations: number
  /** Token usage split, when the child knows it. */
  usage?: { inputTokens: number; outputTokens: number; cachedInputTokens?: number }
}

/** A spend report as the value of `cordisSubagents` (merged with whatever else the child sends there). */
export function spendValue(report: SpendReport): Record<string, unknown> {
  const value: Record<string, unknown> = {
    work: { steps: report.steps, toolCalls: report.toolCalls, delegations: report.delegations },
    tokens: report.tokens,
  }
  if (report.usage) value.usage = { ...report.usage }
  return value
}

/**
 * A spend report in a `_meta` / `metadata` object, or undefined when there is none or it is
 * malformed. Counts must be non-negative safe integers, each clamped to MAX_REPORTED_COUNT (so is
 * `tokens`); `usage`, when present, must be well-formed (cached tokens are capped at the input
 * tokens), and `tokens` is at least its total.
 */
export function spendFromMeta(meta: unknown): SpendReport | undefined {
  const given = isRecord(meta) ? meta[CROSSING_KEY] : undefined
  if (!isRecord(given) || !isRecord(given.work)) return undefined
  const [steps, toolCalls, delegations] = [given.work.steps, given.work.toolCalls, given.work.delegations].map(reportedCount)
  if (steps === undefined || toolCalls === undefined || delegations === undefined) return undefined
  const report: SpendReport = { tokens: 0, steps, toolCalls, delegations }
  const usage = usageFrom(given.usage)
  if (usage) {
    report.usage = usage
    report.tokens = reportedCount(addCounts(usage.inputTokens, usage.outputTokens))!
  }
  const tokens = reportedCount(given.tokens)
  if (tokens !== undefined) report.tokens = Math.max(report.tokens, tokens)
  return report
}

/** The larger of two cumulative reports, field by field (reports may arrive out of order; spend never shrinks). */
export function laterSpend(a: SpendReport | undefined, b: SpendReport): SpendReport {
  if (!a) return b
  const out: SpendReport = {
    tokens: Math.max(a.tokens, b.tokens),
    steps: Math.max(a.steps, b.steps),
    toolCalls: Math.max(a.toolCalls, b.toolCalls),
    delegations: Math.max(a.delegations, b.delegations),
  }
  const usage = b.usage ?? a.usage
  if (usage) out.usage = usage
  return out
}

function usageFrom(value: unknown): SpendReport['usage'] | undefined {
  if (!isRecord(value)) return undefined
  const [inputTokens, outputTokens, cached] = [value.inputTokens, value.outputTokens, value.cachedInputTokens].map(reportedCount)
  if (inputTokens === undefined || outputTokens === undefined) return undefined
  const usage: NonNullable<SpendReport['usage']> = { inputTokens, outputTokens }
  if (cached !== undefined) usage.cachedInputTokens = Math.min(cached, inputTokens)
  return usage
}
