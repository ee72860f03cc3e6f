import { CheckpointError } from './errors.js'
import { RUN_COLUMNS, type RunRow, type RunState } from './records.js'

export interface RunFilter {
  state?: RunState | RunState[]
  parent?: string
  /** Runs of the tree with this root id (the first id of their path). */
  root?: string
  background?: boolean
  /** Runs last saved by this host name (`host` of the store's config). */
  host?: string
  /** Leaves out each run's `transcript` and `result`, the two large columns (`load` reads them): a listing of many runs. */
  brief?: boolean
  /** At most this many (capped at `maxList`), oldest update first. */
  limit?: number
}

/** The columns a brief listing reads. */
const BRIEF_COLUMNS = RUN_COLUMNS.filter((column) => column !== 'transcript' && column !== 'result')

interface ListQuery { query: Record<string, unknown>; limit: number; fields?: Array<keyof RunRow> }

/** `list`'s query, row limit and columns for `filter` (CHECKPOINT_INVALID for a limit that is not a whole number from 1). */
export function listQuery(filter: RunFilter, maxList: number): ListQuery {
  const query: Record<string, unknown> = {}
  if (filter.state !== undefined) query.state = Array.isArray(filter.state) ? filter.state : [filter.state]
  if (filter.parent !== undefined) query.parent = filter.parent
  if (filter.background !== undefined) query.background = filter.background
  if (filter.root !== undefined) query.root = filter.root
  if (filter.host !== undefined) query.host = filter.host
  if (filter.limit !== undefined && !(Number.isSafeInteger(filter.limit) && filter.limit >= 1)) {
    throw new CheckpointError('CHECKPOINT_INVALID', `limit must be a whole number from 1, got ${filter.limit}.`)
  }
  const limit = Math.min(filter.limit ?? maxList, maxList)
  return filter.brief ? { query, limit, fields: [...BRIEF_COLUMNS] } : { query, limit }
}
