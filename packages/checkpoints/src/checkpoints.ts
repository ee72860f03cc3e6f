import { randomUUID } from 'node:crypto'
import { Context, type Logger, Service } from 'cordis'
import { checkState, toRecord, toRecords, toRow } from './codec.js'
import { Config, type Limits } from './config.js'
import { directWriter } from './direct-writes.js'
import { type DirectWriter, type OpRow, replayOps } from './write-ops.js'
import { CheckpointError, notMoved, runNotFound } from './errors.js'
import { GroupCommit } from './group-commit.js'
import { KeyLocks } from './locks.js'
import { Questions } from './questions.js'
import { declareTables, type RunCheckpoint, type StoredRun, type RunRow, type RunState, TABLES } from './records.js'
import { deferredColumns, isNew, type RecordOptions, type Stamp } from './record-ops.js'
import { removeRuns, sweep, type SweepReport } from './retention.js'
import { listQuery, type RunFilter } from './run-filter.js'
import { RunCount } from './run-count.js'
import { STOP_WRITES_MS, stopStore } from './store-stop.js'
import { openRunLog, type RunLog, runLogFile } from './run-log.js'
import type { StoreContext } from './store.js'
import { TaskKeys } from './task-keys.js'

declare module 'cordis' {
  interface Context {
    checkpoints: Checkpoints
  }
}

/** A state for `transition` with the other fields to change along with it. */
export type RunTransition = Omit<RunCheckpoint, 'id'> & { state: RunState }

/**
 * `ctx.checkpoints`: durable records of sub-agent runs through `ctx.database` (minato). Available
 * once the host's own `running` runs of an earlier start are marked `interrupted`.
 */
export class Checkpoints extends Service {
  /** The service's name, declared so a host can tell a checkpoints plugin is loaded before it is ready. */
  static readonly [Service.provide] = 'checkpoints'
  static inject = ['model', 'database']
  static Config = Config

  readonly limits: Limits
  readonly host: string
  readonly instance = randomUUID()
  readonly tasks: TaskKeys
  readonly questions: Questions
  /** How many runs this start found `running` from an earlier start of this host and marked `interrupted`. */
  interruptedAtStart = 0
  private readonly store: StoreContext
  private readonly logs: Logger
  /** Writes of one run, in order within this start (see locks.ts). */
  private readonly rows = new KeyLocks()
  private readonly count: RunCount
  /** The run table's hot writes, batched and written straight to the driver (direct-writes.ts); none on a driver it does not know. */
  private writes: GroupCommit | undefined
  private writer: DirectWriter | undefined
  /** The run log (run-log.ts): records a caller need not wait on the database for. */
  private log: RunLog | undefined
  private starting: Promise<void> | undefined
  private stopping = false
  /** @internal How long a stop waits for what is queued: a test of a hung database lowers it. */ stopWritesMs = STOP_WRITES_MS
  private ended!: () => void
  private readonly ending = new Promise<void>((resolve) => { this.ended = resolve })

  constructor(ctx: Context, config: Config = {}) {
    super(ctx, 'checkpoints')
    try {
      this.limits = Config(config) as Limits
    } catch (error) {
      throw new CheckpointError('CHECKPOINTS_INVALID_CONFIG', `checkpoints: ${(error as Error).message}`, { cause: error })
    }
    this.host = this.limits.host
    // Taken now: the stop, and writes that fail during it, still log once the logger service is gone.
    this.logs = ctx.logger('checkpoints')
    this.store = { ctx, limits: this.limits, host: this.host, instance: this.instance }
    this.tasks = new TaskKeys(this.store)
    this.questions = new Questions(this.store)
    this.count = new RunCount(this.store)
    declareTables(ctx)
  }

  protected override start(): Promise<void> {
    return this.starting = this.open()
  }

  private async open(): Promise<void> {
    // The writer and the run log first: what an earlier start logged is written before anything reads the table.
    // A stop during the start ends it at the next step (the database may be gone by then); what it opened is closed.
    const writer = directWriter(this.store)
    try {
      await writer?.ready?.()
      const file = writer && runLogFile(this.limits.runLog, writer.file, (this.ctx as { baseDir?: string }).baseDir ?? process.cwd())
      if (!this.stopping) this.log = file ? await openRunLog(file, (ops) => replayOps(writer, ops), this.logs) : undefined
      if (!this.stopping) this.interruptedAtStart = await this.markInterrupted()
      if (!this.stopping) await this.sweep()
    } catch (error) {
      await this.shut(writer)
      if (this.stopping) return
      throw error
    }
    if (this.stopping) return this.shut(writer)
    if (writer) {
      this.writer = writer
      this.writes = new GroupCommit(writer, this.log, (op, error) => this.logs.warn(op.kind === 'insert'
        ? `the start record of run ${op.id} was not written: %s`
        : `the logged record of run ${op.id} was not written${error ? ' (the run log keeps it for the next start)' : ''}: %s`,
      error ?? 'no such run, or it settled'))
      // SQLite: one process per file, so the kept run count needs no recount between sweeps.
      this.count.alone = writer.kind === 'sqlite'
    }
    const sweepNow = () => void this.sweep().catch((error) => this.logs.warn('retention sweep failed: %s', error))
    this.ctx.setInterval(sweepNow, this.limits.sweepInterval)
  }

  /** Closes what a start opened (the run log, then the writer thread): it failed, or a stop came. */
  private async shut(writer: DirectWriter | undefined): Promise<void> {
    this.log?.close()
    this.log = undefined
    await writer?.close()
  }

  protected override async stop(): Promise<void> {
    // Detached at once: what the app's other plugins write as they are disposed is not queued here.
    // A start still running sees `stopping` and closes what it opened itself.
    this.stopping = true
    const parts = { writes: this.writes, count: this.count, writer: this.writer, log: this.log }
    this.writes = undefined
    this.writer = undefined
    this.log = undefined
    await this.starting?.catch(ignore)
    await stopStore(parts, (message) => this.logs.warn(message), this.stopWritesMs).finally(this.ended)
  }

  /**
   * Resolves once this store has stopped: what it queued is written, its writer thread has ended and
   * its run log is closed. cordis does not await a service's stop (`ctx.stop()` resolves first), so a
   * host that removes, moves or copies the database file after a stop awaits this first.
   */
  stopped(): Promise<void> {
    return this.ending
  }

  /** Resolves once every queued write is in the database (a lazy `record` is queued, not written, when it returns). */
  async drain(): Promise<void> {
    await this.writes?.drain()
  }

  /** Marks this host's `running` runs of earlier starts `interrupted` (they lost their process). */
  private async markInterrupted(): Promise<number> {
    const result = await this.ctx.database.set(TABLES.runs,
      { state: 'running', host: this.host, instance: { $ne: this.instance } },
      { state: 'interrupted', updatedAt: new Date() })
    return result.matched ?? 0
  }

  /**
   * Creates or updates a run: only the fields given change. A new run needs `path`, `provider`
   * and `state`; it is refused with CHECKPOINT_LIMIT when `maxRuns` are kept and none is sweepable.
   * A settled run keeps its state: a save that would move it to another state is refused with
   * RUN_SETTLED (its other fields may still be updated).
   */
  async save(checkpoint: RunCheckpoint): Promise<StoredRun> {
    const row = toRow(checkpoint, this.limits)
    return await this.rows.run(row.id!, () => this.saveNow(row))
  }

  private async saveNow(row: Partial<RunRow>): Promise<StoredRun> {
    await this.drain()
    const db = this.ctx.database
    const now = new Date()
    const [existing] = await db.get(TABLES.runs, { id: row.id! }, { fields: ['id'] })
    if (!existing) {
      for (const key of ['path', 'provider', 'state'] as const) {
        if (row[key] === undefined) throw new CheckpointError('CHECKPOINT_INVALID', `a new run (${row.id}) needs ${key}.`)
      }
      await this.count.makeRoom()
      await db.upsert(TABLES.runs, [{ ...row, host: this.host, instance: this.instance, createdAt: now, updatedAt: now }])
      this.count.added()
    } else {
      await this.update(row, now)
    }
    return (await this.load(row.id!))!
  }

  /**
   * `save` without reading anything back, for a writer that keeps its own view (the service's journal):
   * a run it just made (`created`) is one insert, any other save one conditional update, written in
   * batches (group-commit.ts) on SQLite and PostgreSQL. `lazy`, `deferred`, `logged`: the README's API table.
   */
  record(checkpoint: RunCheckpoint, options: RecordOptions = {}): Promise<void> {
    return this.recordNow(checkpoint, options) ?? DONE
  }

  /** `record`, but undefined when there is nothing to wait for (a `lazy` insert queued, a `logged` update in the run log). */
  recordNow(checkpoint: RunCheckpoint, options: RecordOptions = {}): Promise<void> | undefined {
    let row: Partial<RunRow>
    try {
      row = toRow(checkpoint, this.limits)
    } catch (error) {
      return Promise.reject(error)
    }
    const writes = this.writes
    const id = row.id!
    // Nothing of this run queued through the lock and no count to take: queued now, in call order.
    if (writes && !this.rows.busy(id)) {
      if (!isNew(row, options)) return this.updateNow(writes, row, options.logged)
      if (this.count.roomNow()) return this.insertNow(writes, row, options)
    }
    if (writes) return this.rows.run(id, () => this.recordBatched(writes, row, options))
    if (options.created && options.deferred) Object.assign(row, deferredColumns(id, options.deferred, this.limits, this.dropped(id)))
    return this.rows.run(id, async () => {
      if (isNew(row, options)) {
        await this.count.makeRoom()
        const now = new Date()
        try {
          const full = { ...row, host: this.host, instance: this.instance, createdAt: now, updatedAt: now } as RunRow
          await this.ctx.database.create(TABLES.runs, full)
          this.count.added()
          return
        } catch (error) {
          // Not new after all (a second start of one id): it is updated as `save` would.
          const [existing] = await this.ctx.database.get(TABLES.runs, { id }, { fields: ['id'] }).catch(() => [])
          if (!existing) throw error
        }
      }
      await this.update(row, new Date())
    })
  }

  private async recordBatched(writes: GroupCommit, row: Partial<RunRow>, options: RecordOptions): Promise<void> {
    if (isNew(row, options)) {
      await this.count.makeRoom()
      await this.insertNow(writes, row, options)
      return
    }
    await this.updateNow(writes, row, options.logged)
  }

  /** Stamps what every direct write carries on `row` itself (its date as epoch ms, as a write carries dates): no object made per write. */
  private stamp(row: OpRow & Partial<Stamp>): OpRow & Stamp {
    row.host = this.host
    row.instance = this.instance
    row.updatedAt = Date.now()
    return row as OpRow & Stamp
  }

  private insertNow(writes: GroupCommit, row: Partial<RunRow>, options: RecordOptions): Promise<void> | undefined {
    const id = row.id!
    const deferred = options.deferred
    const late = deferred && (() => deferredColumns(id, deferred, this.limits, this.dropped(id)) as OpRow)
    // The row's other columns are the writer's (writer-statements.ts): only the given (and late the deferred, dateless) ones are kept.
    const op = { kind: 'insert' as const, id, given: this.stamp(row as OpRow), late }
    this.count.added()
    if (!options.lazy) return writes.write(op).then(ignore)
    writes.writeLazy(op)
  }

  private updateNow(writes: GroupCommit, row: Partial<RunRow>, logged?: boolean): Promise<void> | undefined {
    const id = row.id!
    // The row is the changes, its id among them (a write never changes a run's id): no copy made per write.
    const op = { kind: 'update' as const, id, changes: this.stamp(row as OpRow), guard: row.state !== undefined && row.state !== 'settled' }
    if (logged && writes.writeLogged(op)) return
    return writes.write(op).then((matched) => {
      if (!matched) return this.load(id).then((run) => { throw notMoved(id, run, `moved to ${row.state}`) })
    })
  }

  /** Logs a deferred field left out of run `id`'s record. */
  private dropped(id: string): (error: unknown) => void {
    return (error) => this.logs.warn('run %s: its checkpoint was not stored (%s); it cannot be restored after a restart', id,
      (error as Error)?.message ?? error)
  }

  /** Updates an existing run; a settled run keeps its state (RUN_SETTLED), a missing one is CHECKPOINT_NOT_FOUND. */
  private async update(row: Partial<RunRow>, now: Date): Promise<void> {
    const { id, ...changes } = row
    const query = row.state === undefined || row.state === 'settled' ? { id: id! } : { id: id!, state: { $ne: 'settled' } }
    const result = await this.ctx.database.set(TABLES.runs, query, { ...changes, host: this.host, instance: this.instance, updatedAt: now })
    if (!result.matched) throw notMoved(id!, await this.load(id!), `moved to ${row.state}`)
  }

  /**
   * Moves run `id` to state `to` only if it is in one of the states `from` now, atomically (one
   * conditional UPDATE; on PostgreSQL it holds across hosts): of two callers racing, one moves it.
   * True when this call moved it; false when the run is in another state (or missing). `to` may
   * carry the other fields to change with it (host and instance are set to this start).
   */
  async transition(id: string, from: RunState | RunState[], to: RunState | RunTransition): Promise<boolean> {
    const states = (Array.isArray(from) ? from : [from]).map(checkState)
    const { id: key, ...changes } = toRow({ ...typeof to === 'string' ? { state: to } : to, id }, this.limits)
    return await this.rows.run(key!, async () => {
      await this.drain()
      const query = { id: key!, state: states.filter((state) => state !== 'settled' || changes.state === 'settled') }
      const result = await this.ctx.database.set(TABLES.runs, query as never,
        { ...changes, host: this.host, instance: this.instance, updatedAt: new Date() })
      return (result.matched ?? 0) > 0
    })
  }

  /**
   * Takes ended run `id` (settled or closed) back to `running` for a new turn someone asked for
   * (`ctx.subagents.continue`): the one move out of `settled` the store makes, atomically, so of two
   * continues racing one wins. A restore or a resume never uses it: they go through `transition`,
   * which never moves a settled run. False when the run is not ended (or missing).
   */
  async continueRun(id: string): Promise<boolean> {
    const { id: key } = toRow({ id }, this.limits)
    return await this.rows.run(key!, async () => {
      await this.drain()
      const result = await this.ctx.database.set(TABLES.runs, { id: key!, state: ['settled', 'closed'] } as never,
        { state: 'running', host: this.host, instance: this.instance, updatedAt: new Date() })
      return (result.matched ?? 0) > 0
    })
  }

  async load(id: string): Promise<StoredRun | undefined> {
    await this.drain()
    const [row] = await this.ctx.database.get(TABLES.runs, { id })
    return row && toRecord(row)
  }

  /** Sets a run's state (and stop reason); CHECKPOINT_NOT_FOUND when there is no such run. */
  async setState(id: string, state: RunState, stopReason?: string): Promise<StoredRun> {
    if (!(await this.load(id))) throw runNotFound(id)
    return this.save({ id, state, ...stopReason !== undefined ? { stopReason } : {} })
  }

  async list(filter: RunFilter = {}): Promise<StoredRun[]> {
    const { query, limit, fields } = listQuery(filter, this.limits.maxList)
    await this.drain()
    const rows = await this.ctx.database.get(TABLES.runs, query as never, { sort: { updatedAt: 'asc' }, limit, ...fields ? { fields } : {} }) as RunRow[]
    return toRecords(rows, (error) => this.logs.warn('%s: %s (list skips it)', error.code, error.message))
  }

  async remove(id: string): Promise<boolean> {
    await this.drain()
    const { runs } = await removeRuns(this.store, [id])
    this.count.removed(runs)
    return runs > 0
  }

  /** Runs retention now (it also runs at start and every `sweepInterval`), then counts the runs kept. */
  async sweep(now?: number): Promise<SweepReport> {
    await this.drain()
    const report = await sweep(this.store, now)
    await this.count.exact()
    return report
  }
}

const DONE = Promise.resolve()
function ignore(): void {}
