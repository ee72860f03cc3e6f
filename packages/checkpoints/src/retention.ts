import { $ } from 'minato'
import { TABLES } from './records.js'
import { database, type StoreContext } from './store.js'

export interface SweepReport {
  runs: number
  questions: number
  taskKeys: number
}

/** Deletes in pages of this many rows, so one sweep never builds a huge statement. */
const PAGE = 500
/**
 * What retention keeps however old: the live states. Everything else counts as ended, a row whose state no write stores
 * (damaged or edited, which no read returns) too, so it is swept like an ended run rather than kept toward `maxRuns` for ever.
 */
const NOT_LIVE = { $nin: ['running', 'parked', 'interrupted'] }

/**
 * Retention: ended runs, settled questions and task keys older than `retention`, then the oldest
 * ended runs past `maxRuns`. Live runs (running, parked, interrupted) and pending questions stay.
 */
export async function sweep(store: StoreContext, now = Date.now()): Promise<SweepReport> {
  const db = database(store)
  const cutoff = new Date(now - store.limits.retention)
  const runs = await db.remove(TABLES.runs, { state: NOT_LIVE, updatedAt: { $lt: cutoff } })
  const questions = await db.remove(TABLES.questions, { state: { $ne: 'pending' }, answeredAt: { $lt: cutoff } })
  const taskKeys = await db.remove(TABLES.taskKeys, { claimedAt: { $lt: cutoff } })
  const report = { runs: runs.removed ?? 0, questions: questions.removed ?? 0, taskKeys: taskKeys.removed ?? 0 }
  report.runs += await trimToCount(store)
  return report
}

/** Removes the oldest ended runs until at most `maxRuns` runs remain (or no ended run is left). */
async function trimToCount(store: StoreContext): Promise<number> {
  const total = await database(store).eval(TABLES.runs, (row) => $.count(row.id), {})
  return await trimOldest(store, total - store.limits.maxRuns)
}

/** Removes up to `excess` of the oldest ended runs, a page at a time (an index on `updatedAt` finds them). */
export async function trimOldest(store: StoreContext, excess: number): Promise<number> {
  const db = database(store)
  let removed = 0
  while (removed < excess) {
    const limit = Math.min(excess - removed, PAGE)
    const oldest = await db.get(TABLES.runs, { state: NOT_LIVE }, { fields: ['id'], sort: { updatedAt: 'asc' }, limit })
    if (!oldest.length) break
    const result = await db.remove(TABLES.runs, { id: oldest.map((row) => row.id) })
    removed += result.removed ?? 0
    if (oldest.length < limit || !result.removed) break
  }
  return removed
}
