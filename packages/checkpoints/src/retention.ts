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
const LIVE = ['running', 'parked', 'interrupted']
const NOT_LIVE = { $nin: LIVE }

/**
 * Retention: ended runs, settled questions and task keys older than `retention` (a key of a live run stays), then the
 * oldest ended runs past `maxRuns`. Live runs (running, parked, interrupted) and pending questions stay.
 */
export async function sweep(store: StoreContext, now = Date.now()): Promise<SweepReport> {
  const db = database(store)
  const cutoff = new Date(now - store.limits.retention)
  const runs = await db.remove(TABLES.runs, { state: NOT_LIVE, updatedAt: { $lt: cutoff } })
  const questions = await db.remove(TABLES.questions, { state: { $ne: 'pending' }, answeredAt: { $lt: cutoff } })
  const taskKeys = await sweepTaskKeys(store, cutoff)
  const report = { runs: runs.removed ?? 0, questions: questions.removed ?? 0, taskKeys }
  report.runs += await trimToCount(store)
  return report
}

/**
 * Removes the task keys claimed before `cutoff` whose run is not live, a page at a time in key order: the key of a run
 * still parked (or interrupted, or running) is what a re-run of its task reattaches by, however old, so it stays with it.
 */
async function sweepTaskKeys(store: StoreContext, cutoff: Date): Promise<number> {
  const db = database(store)
  let removed = 0
  let after = ''
  for (;;) {
    const keys = await db.get(TABLES.taskKeys, { claimedAt: { $lt: cutoff }, key: { $gt: after } },
      { fields: ['key', 'runId'], sort: { key: 'asc' }, limit: PAGE })
    if (!keys.length) break
    after = keys[keys.length - 1].key
    const live = await db.get(TABLES.runs, { id: [...new Set(keys.map((row) => row.runId))], state: LIVE }, { fields: ['id'] })
    const held = new Set(live.map((row) => row.id))
    const gone = keys.filter((row) => !held.has(row.runId)).map((row) => row.key)
    if (gone.length) removed += (await db.remove(TABLES.taskKeys, { key: gone })).removed ?? 0
    if (keys.length < PAGE) break
  }
  return removed
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
