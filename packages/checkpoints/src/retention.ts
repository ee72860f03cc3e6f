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
 * Retention: ended runs older than `retention` with their questions, settled questions and task keys older than it (a key
 * of a live run stays), then the oldest ended runs past `maxRuns`, with theirs. Live runs (running, parked, interrupted)
 * keep every question; a pending question of no stored run stays.
 */
export async function sweep(store: StoreContext, now = Date.now()): Promise<SweepReport> {
  const db = database(store)
  const cutoff = new Date(now - store.limits.retention)
  const old = await removeEnded(store, { state: NOT_LIVE, updatedAt: { $lt: cutoff } }, Infinity)
  const questions = await db.remove(TABLES.questions, { state: { $ne: 'pending' }, answeredAt: { $lt: cutoff } })
  const taskKeys = await sweepTaskKeys(store, cutoff)
  const trimmed = await trimToCount(store)
  return { runs: old.runs + trimmed.runs, questions: old.questions + (questions.removed ?? 0) + trimmed.questions, taskKeys }
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

/** Removes the oldest ended runs (with their questions) until at most `maxRuns` runs remain (or no ended run is left). */
async function trimToCount(store: StoreContext): Promise<Removed> {
  const total = await database(store).eval(TABLES.runs, (row) => $.count(row.id), {})
  return await removeEnded(store, { state: NOT_LIVE }, total - store.limits.maxRuns)
}

/** Removes up to `excess` of the oldest ended runs with their questions; how many runs went. */
export async function trimOldest(store: StoreContext, excess: number): Promise<number> {
  return (await removeEnded(store, { state: NOT_LIVE }, excess)).runs
}

interface Removed {
  runs: number
  questions: number
}

/** Which ended runs a removal takes: every one, or those last updated before a cutoff. */
interface Ended {
  state: typeof NOT_LIVE
  updatedAt?: { $lt: Date }
}

/** Removes up to `limit` of the ended runs `where` matches, oldest first, a page at a time (an index on `updatedAt` finds them). */
async function removeEnded(store: StoreContext, where: Ended, limit: number): Promise<Removed> {
  const db = database(store)
  const removed: Removed = { runs: 0, questions: 0 }
  while (removed.runs < limit) {
    const size = Math.min(limit - removed.runs, PAGE)
    const oldest = await db.get(TABLES.runs, where, { fields: ['id'], sort: { updatedAt: 'asc' }, limit: size })
    if (!oldest.length) break
    // Matched again as it is deleted: a run that went live since this read (another host continued it) stays.
    const page = await removeRuns(store, oldest.map((row) => row.id), where)
    removed.runs += page.runs
    removed.questions += page.questions
    if (oldest.length < size || !page.runs) break
  }
  return removed
}

/**
 * Removes the runs `ids` that `where` matches, then every question (pending ones too) of those of `ids` no longer stored:
 * a question goes with its run, so `maxRuns` bounds the runs questions are kept for, and nobody can answer a question of a
 * run that is gone (a resume needs its stored run). A run still stored, one `where` no longer matched too, keeps them all.
 */
export async function removeRuns(store: StoreContext, ids: string[], where: Partial<Ended> = {}): Promise<Removed> {
  const db = database(store)
  const runs = (await db.remove(TABLES.runs, { ...where, id: ids })).removed ?? 0
  if (!runs) return { runs, questions: 0 }
  const kept = new Set((await db.get(TABLES.runs, { id: ids }, { fields: ['id'] })).map((row) => row.id))
  const gone = ids.filter((id) => !kept.has(id))
  const questions = gone.length ? (await db.remove(TABLES.questions, { runId: gone })).removed ?? 0 : 0
  return { runs, questions }
}
