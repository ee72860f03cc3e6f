import { headBytes, type Usage, type WorkCounts } from '@cordis-subagents/shared'
import type { IncompleteLimit, SubagentOutcome, SubagentRunInfo, SubagentStatus, SubagentStopReason } from '../types.js'

/** Final outcomes the in-memory book keeps (the most recent ones; older ones are forgotten first). */
export const MAX_KEPT_RESULTS = 256
/** UTF-8 bytes of output (and diagnostics) the in-memory book keeps in all; one output longer than this is kept cut to it. */
export const MAX_KEPT_RESULT_BYTES = 16 * 1024 * 1024

/** What `ctx.subagents.result(runId)` gives: a run's final outcome, read again without re-running anything. */
export interface KeptResult {
  runId: string
  provider: string
  /** The id of the agent that started the run. */
  parentId: string
  label?: string
  stopReason: SubagentStopReason
  /** Beside `stopReason`, as on the outcome (from the store: its stop reason's status; a stored `budget` stop names no limit). */
  status: SubagentStatus
  /** With `status: 'incomplete'`: the limit, when known. */
  limit?: IncompleteLimit
  /** The child's output (partial when the stop reason is not `completed`); see `truncated`. */
  output: string
  diagnostic?: string
  usage?: Usage
  work: WorkCounts
  /** When the run ended (ms since the epoch). From the store: its record's last update. */
  endedAt: number
  /** `memory`: this process saw it end; `store`: read from `ctx.checkpoints` (another start or host). */
  source: 'memory' | 'store'
  /**
   * True when `output` may not be the whole output: the in-memory book cuts one longer than its
   * byte bound, and the store keeps at most its `maxTextBytes` (an output that reached that cap
   * may have been cut there).
   */
  truncated: boolean
}

export interface ResultLimits {
  maxResults: number
  maxBytes: number
}

interface Entry {
  result: KeptResult
  bytes: number
}

/**
 * The outcomes of ended runs by run id, most recent last, bounded by count and bytes. It holds
 * copies of what runs already settled with: reading one never touches the run or its provider.
 * It also remembers (ids only, bounded) which runs it forgot, so a read of one says so.
 */
export class ResultBook {
  private readonly entries = new Map<string, Entry>()
  /** Ids of results forgotten for room, oldest first (at most 4 × `maxResults`). */
  private readonly forgotten = new Set<string>()
  private bytes = 0

  constructor(readonly limits: ResultLimits = { maxResults: MAX_KEPT_RESULTS, maxBytes: MAX_KEPT_RESULT_BYTES }) {}

  /** Keeps the final outcome of run `info.runId` (a later one for the same run replaces it). */
  record(info: SubagentRunInfo, outcome: SubagentOutcome): void {
    const { maxResults, maxBytes } = this.limits
    if (maxResults < 1) return
    let output = outcome.output
    // The diagnostic counts too: the output is cut to what it leaves, so the new entry alone fits the bound.
    const diagnosticBytes = outcome.diagnostic === undefined ? 0 : Buffer.byteLength(outcome.diagnostic, 'utf8')
    const room = Math.max(0, maxBytes - diagnosticBytes)
    let bytes = Buffer.byteLength(output, 'utf8')
    const truncated = bytes > room
    if (truncated) {
      // A fresh copy of the head: a slice would keep the whole output alive behind it.
      output = Buffer.from(headBytes(output, room), 'utf8').toString('utf8')
      bytes = Buffer.byteLength(output, 'utf8')
    }
    const result: KeptResult = {
      runId: info.runId, provider: info.provider, parentId: info.parentId, stopReason: outcome.stopReason, status: outcome.status, output,
      work: { ...outcome.work }, endedAt: Date.now(), source: 'memory', truncated,
    }
    if (outcome.limit !== undefined) result.limit = outcome.limit
    if (info.label !== undefined) result.label = info.label
    if (outcome.diagnostic !== undefined) {
      result.diagnostic = outcome.diagnostic
      bytes += diagnosticBytes
    }
    if (outcome.usage) result.usage = { ...outcome.usage }
    this.drop(info.runId)
    this.forgotten.delete(info.runId)
    this.entries.set(info.runId, { result: Object.freeze(result), bytes })
    this.bytes += bytes
    // The oldest go first; the entry just kept is never the one forgotten.
    const over = () => this.entries.size > maxResults || (this.bytes > maxBytes && this.entries.size > 1)
    while (over()) this.forget(this.entries.keys().next().value!)
  }

  /** The kept outcome of run `runId`, or undefined. */
  get(runId: string): KeptResult | undefined {
    return this.entries.get(runId)?.result
  }

  /** Whether this book kept run `runId`'s outcome once and has forgotten it for room. */
  wasForgotten(runId: string): boolean {
    return this.forgotten.has(runId)
  }

  /** How many outcomes, and bytes of output and diagnostics, are kept now. */
  get size(): { results: number; bytes: number } {
    return { results: this.entries.size, bytes: this.bytes }
  }

  private forget(runId: string): void {
    this.drop(runId)
    this.forgotten.add(runId)
    if (this.forgotten.size > 4 * this.limits.maxResults) this.forgotten.delete(this.forgotten.values().next().value!)
  }

  private drop(runId: string): void {
    const entry = this.entries.get(runId)
    if (!entry) return
    this.entries.delete(runId)
    this.bytes -= entry.bytes
  }
}
