import type { Usage, WorkCounts } from '@cordis-subagents/shared'
import type { Agent } from '@cordis-subagents/agent'
import type { IncompleteLimit, SubagentRun, SubagentStatus, SubagentStopReason } from '../types.js'

// What `ctx.subagents.result(runId)` reads back, and the in-memory book's bounds (types and
// constants). The book (`ResultBook`) is a `subagent/end` listener in after-run.ts.

/**
 * Most entries a `DelegationAccount` lists (the rest are counted, `omitted`), and what a tree keeps of its ended
 * delegations: past it the oldest is only counted, so a root that lives for days (a chat's) holds this many entries.
 */
export const MAX_ACCOUNT_LISTED = 1000
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
  /** A typed run's validated answer (`output` is its JSON), when this process saw it end; from the store: its JSON in `output` only. */
  value?: unknown
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

/** How long a run stays continuable after it ended (ms): 1 hour. */
export const CONTINUE_WINDOW_MS = 60 * 60_000
/** Most ended runs one service keeps continuable; the one that ended longest ago is dropped first. */
export const MAX_CONTINUABLE_RUNS = 256
/**
 * Most of their children's transcripts the continuable runs hold in all, as estimated while each child ran (characters of
 * its texts, about a byte each, and a fixed amount per message, tool call and image; after-run.ts `runObserver`): past it
 * the runs that ended longest ago are dropped first, and a run whose transcript alone is larger is not kept at all.
 */
export const MAX_CONTINUABLE_BYTES = 64 * 1024 * 1024
/**
 * Most child transcripts one service sizes at once (verbs/continuation.ts `ChildSizes`): past it the child sized first
 * is no longer sized, and its run, once ended, is not kept continuable (its transcript could be any size).
 */
export const MAX_SIZED_CHILDREN = 4096

/** A run the continuable book dropped to bound memory: its parent's id, and whether it was its child's size that was lost (not room). */
export interface DroppedRun {
  parentId: string
  unsized?: boolean
}

/** A run that ended and can be continued, as `ctx.subagents.continuable()` lists it. */
export interface ContinuableRunInfo {
  runId: string
  provider: string
  parentId: string
  label?: string
  /** `Date.now()` when its last turn ended. */
  endedAt: number
  /** Its last turn's stop reason. */
  stopReason: SubagentStopReason
  /** Continues it took so far. */
  continues: number
}

/** A continuable run as the book keeps it: its provider's run and, while it is not disposed, its parent; nothing copied. */
export interface ContinuableEntry extends ContinuableRunInfo {
  /** `performance.now()` when its last turn ended: the window is measured on it (a step of the wall clock moves `endedAt` only). */
  endedMono: number
  run: SubagentRun
  /** Gone once the parent is disposed (its transcript with it): a continue then makes a fresh parent. */
  parent?: Agent
  /** Stops watching the parent's dispose (the entry left the book first). */
  letGo?: () => void
  /** What its child's transcript holds, as estimated while the child ran (counted against `MAX_CONTINUABLE_BYTES`). */
  size: number
}
