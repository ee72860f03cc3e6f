import { $ } from 'minato'
import { CheckpointError } from './errors.js'
import { TABLES } from './records.js'
import { trimOldest } from './retention.js'
import { database, type StoreContext } from './store.js'

/**
 * How many runs the store holds, kept instead of counted on each new run: a count scans the whole
 * table, and a delegation must not pay for every run ever stored. The table is counted at start,
 * after each sweep, every `step` new runs of this start (other hosts of a shared store add runs
 * too) and before any run is trimmed or refused, so the bound holds to within `step` new runs.
 */
export class RunCount {
  private known: number | undefined
  private sinceCount = 0
  /**
   * Only this process adds runs (SQLite: one process per file): the kept count stays exact between
   * counts, so no new run pays for one; the table is counted at start, after sweeps and before a trim.
   */
  alone = false

  constructor(private readonly store: StoreContext) {}

  /** 1 % of `maxRuns` (at least 1): how many new runs pass between counts, and how far ahead a trim makes room. */
  get step(): number {
    return Math.max(1, Math.floor(this.store.limits.maxRuns / 100))
  }

  /** Counts the table (a full scan: at start, after a sweep, and every `step` new runs, never per run). */
  async exact(): Promise<number> {
    const total = await database(this.store).eval(TABLES.runs, (row) => $.count(row.id), {})
    this.known = total
    this.sinceCount = 0
    return total
  }

  /**
   * Makes room for one new run: past `maxRuns` the oldest ended runs go, `step` ahead so the next
   * new runs find room without a count. CHECKPOINT_LIMIT when none has ended.
   */
  async makeRoom(): Promise<void> {
    const { maxRuns } = this.store.limits
    let total = this.known === undefined || this.due() ? await this.exact() : this.known
    if (total < maxRuns) return
    if (this.sinceCount > 0) total = await this.exact()
    if (total < maxRuns) return
    const removed = await trimOldest(this.store, total + Math.min(this.step, maxRuns) - maxRuns)
    this.removed(removed)
    total -= removed
    if (total >= maxRuns) {
      throw new CheckpointError('CHECKPOINT_LIMIT',
        `${total} runs are kept (maxRuns) and none has ended: close or settle some, or raise maxRuns.`)
    }
  }

  /** True when `makeRoom` would return at once, with nothing to count or trim: a new run needs no wait. */
  roomNow(): boolean {
    return this.known !== undefined && !this.due() && this.known < this.store.limits.maxRuns
  }

  /** A count is due: `step` new runs since the last, unless this process is the only writer. */
  private due(): boolean {
    return !this.alone && this.sinceCount >= this.step
  }

  added(): void {
    if (this.known !== undefined) this.known++
    this.sinceCount++
  }

  removed(count: number): void {
    if (this.known !== undefined) this.known = Math.max(0, this.known - count)
  }
}
