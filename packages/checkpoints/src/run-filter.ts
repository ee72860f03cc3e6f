import { CheckpointError } from './errors.js'
import type { RunState } from './records.js'

export interface RunFilter {
  state?: RunState | RunState[]
  parent?: string
  /** Runs of the tree with this root id (the first id of their path). */
  root?: string
  background?: boolean
  /** At most this many (capped at `maxList`), oldest update first. */
  limit?: number
}

/** `list`'s query and row limit for `filter` (CHECKPOINT_INVALID for a limit that is not a whole number from 1). */
export function listQuery(filter: RunFilter, maxList: number): { query: Record<string, unknown>; limit: number } {
  const query: Record<string, unknown> = {}
  if (filter.state !== undefined) query.state = Array.isArray(filter.state) ? filter.state : [filter.state]
  if (filter.parent !== undefined) query.parent = filter.parent
  if (filter.background !== undefined) query.background = filter.background
  if (filter.root !== undefined) query.root = filter.root
  if (filter.limit !== undefined && !(Number.isSafeInteger(filter.limit) && filter.limit >= 1)) {
    throw new CheckpointError('CHECKPOINT_INVALID', `limit must be a whole number from 1, got ${filter.limit}.`)
  }
  return { query, limit: Math.min(filter.limit ?? maxList, maxList) }
}
