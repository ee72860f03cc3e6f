import { $ } from 'minato'
import { CheckpointError } from './errors.js'
import { countsRows } from './driver-capabilities.js'
import { TABLES } from './records.js'
import { trimOldest } from './retention.js'
import { database, type StoreContext } from './store.js'

/**
 * How many runs the store holds, kept instead of counted on each new run: a count scans the whole
 * table, and a delegation must not pay for every run ever stored. The table is counted at start,
 * after each sweep, every `step` new runs of this start (other hosts of a shared store add runs
 * too) and before any run is trimmed or refused, so the bound holds to within `step` new runs. A
 * count due while the kept count leaves room for two more steps is taken in the background: no new
 * run waits for a scan of the whole table.
 */
export class RunCount {
  private known: number | undefined
  private sinceCount = 0
  /** New runs of this start, all told (what a count in the background missed is told from it). */
  private addedAll = 0
  /** A count taken in the background (`roomNow`), while new runs go on. */
  private counting: Promise<void> | undefined
  /**
   * Only this process adds runs (SQLite: one process per file): the kept count stays exact between
   * counts, so no new run pays for one; the table is counted at start, after sweeps and before a refusal.
   */
  alone = false

  constructor(private readonly store: StoreContext) {}

  /** 1 % of `maxRuns` (at least 1): how many new runs pass between counts, and how far ahead a trim makes room. */
  get step(): number {
    return Math.max(1, Math.floor(this.store.limits.maxRuns / 100))
  }

  /** Counts the table (a full scan: at start, after a sweep, and every `step` new runs, never per run). */
  async exact(): Promise<number> {
    const total = await this.countRows()
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
    // Where others add runs, the count is taken again before a trim. Alone, the kept count is exact: a
    // full store trims without scanning the whole table each time (the scan, not the trim, was the cost).
    if (this.sinceCount > 0 && !this.alone) total = await this.exact()
    if (total < maxRuns) return
    const removed = await trimOldest(this.store, total + Math.min(this.step, maxRuns) - maxRuns)
    this.removed(removed)
    total -= removed
    // Before a refusal, counted (a kept count can only be over: an insert of an id that existed).
    if (total >= maxRuns && this.alone) total = await this.exact()
    if (total >= maxRuns) {
      throw new CheckpointError('CHECKPOINT_LIMIT',
        `${total} runs are kept (maxRuns) and none has ended: close or settle some, or raise maxRuns.`)
    }
  }

  /**
   * True when a new run needs no wait: the kept count is below `maxRuns` and no count is due; or one
   * is due with room for two more steps, and the table is counted in the background meanwhile (a
   * new run does not wait for a scan that cannot change what it does).
   */
  roomNow(): boolean {
    const { maxRuns } = this.store.limits
    if (this.known === undefined || this.known >= maxRuns) return false
    if (!this.due()) return true
    if (this.known + 2 * this.step > maxRuns) return false
    this.counting ??= this.countAside()
    return true
  }

  /**
   * Counts the table while new runs go on: those added meanwhile are added to what it found (an
   * over-count at worst, which only brings the next count or trim sooner).
   */
  private async countAside(): Promise<void> {
    const before = this.addedAll
    try {
      const total = await this.exact()
      this.known = total + this.addedAll - before
      this.sinceCount = this.addedAll - before
    } catch (error) {
      // Still due: the next new run counts again.
      this.store.ctx.logger('checkpoints').warn('counting the kept runs failed: %s', error)
    } finally {
      this.counting = undefined
    }
  }

  /**
   * The table's rows. On a driver that counts them itself (this package's PostgreSQL driver), one
   * statement straight to it: a shared store counts every `step` new runs, and minato's query building
   * and cordis' service proxy cost the main thread more than the statement. minato's count on any other
   * driver. Found by capability, so a store on SQLite never loads the PostgreSQL client.
   */
  private async countRows(): Promise<number> {
    const driver = (database(this.store) as unknown as { getDriver(table: string): unknown }).getDriver(TABLES.runs)
    if (countsRows(driver)) return await driver.countRows(TABLES.runs)
    return await database(this.store).eval(TABLES.runs, (row) => $.count(row.id), {})
  }

  /** Resolves once a count taken in the background is done (the store stops after it). */
  async settled(): Promise<void> {
    await this.counting
  }

  /** A count is due: `step` new runs since the last, unless this process is the only writer. */
  private due(): boolean {
    return !this.alone && this.sinceCount >= this.step
  }

  added(): void {
    if (this.known !== undefined) this.known++
    this.sinceCount++
    this.addedAll++
  }

  removed(count: number): void {
    if (this.known !== undefined) this.known = Math.max(0, this.known - count)
  }
}
