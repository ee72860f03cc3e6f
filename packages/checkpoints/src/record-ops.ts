import { toRow } from './codec.js'
import type { Limits } from './config.js'
import type { RunCheckpoint, RunRow } from './records.js'

// The rows `Checkpoints.record` writes: a new run's whole row, and the late columns of a lazy start.

/** The fields of a new run's record `record` may take late, when its batch is written (`deferred`). */
export type DeferredFields = Pick<RunCheckpoint, 'transcript' | 'sessionId' | 'taskId' | 'agentUrl'>

/** What the host and this start stamp on every direct write (write-ops.ts): the date as epoch ms. */
export interface Stamp {
  host: string
  instance: string
  updatedAt: number
}

/**
 * The columns of `deferred`'s fields, checked as `record` checks them: a field that cannot be taken
 * (it throws, or is not JSON) is left out; a transcript over `maxTranscriptBytes` is left out and
 * `dropped` says why (the rest is kept).
 */
export function deferredColumns(
  id: string, deferred: () => DeferredFields, limits: Limits, dropped: (error: unknown) => void,
): Partial<RunRow> {
  let fields: DeferredFields
  try {
    fields = deferred()
  } catch (error) {
    dropped(error)
    return {}
  }
  const { transcript, sessionId, taskId, agentUrl } = fields ?? {}
  try {
    const { id: _, ...columns } = toRow({ id, transcript, sessionId, taskId, agentUrl }, limits)
    return columns
  } catch (error) {
    dropped(error)
    try {
      const { id: _, ...columns } = toRow({ id, sessionId, taskId, agentUrl }, limits)
      return columns
    } catch {
      return {}
    }
  }
}

export interface RecordOptions {
  /** A run this writer just made: one insert. */
  created?: boolean
  /** A new run's insert that resolves once queued (written within a few milliseconds). */
  lazy?: boolean
  /** A new run's fields taken when its insert is written (see `record`). */
  deferred?: () => DeferredFields
  /** An update that resolves once it is in the run log (before the database write; see README, Writes). */
  logged?: boolean
}

/** A new run's record: `created`, with the fields a new run needs. */
export function isNew(row: Partial<RunRow>, options: RecordOptions): boolean {
  return !!options.created && row.path !== undefined && row.provider !== undefined && row.state !== undefined
}
