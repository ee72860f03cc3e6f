import type { RunLog } from './run-log.js'
import { asUpdate, type DirectWriter, encodeLate, encodeOp, type OpRow, runOps, type WriteOp } from './write-ops.js'

/** Longest an unwaited (lazy) write stays queued before its batch is written (ms). */
const LAZY_FLUSH_MS = 5
/** Times an unwaited write (a lazy insert, a logged settle) whose batch failed is tried again, in its place before later writes. */
const RETRIES = 3
/** The wait before such a retry (a dropped connection is back by then). */
const RETRY_MS = 100
/** Start records whose retries were spent, kept (the newest) so the run's logged settle still writes its row. */
const MAX_LOST_STARTS = 1024

const NO_ENTRIES: Entry[] = []

interface Entry {
  op: WriteOp
  /** Its line in the run log (a logged record). */
  seq?: number
  /** Absent for a write nobody waits for (lazy or logged): what it meets goes to `late`. */
  resolve?(matched: number): void
  reject?(error: unknown): void
  /** Times its batch failed and it was queued again. */
  tries?: number
  /** The batch it was queued for (`GroupCommit.batches` then): a settle merges into its run's insert only while that is still queued. */
  batch?: number
}

/**
 * The writes of one run merged into one statement of a batch: an insert and the updates that followed
 * it (their texts, in order; the writer merges them, writer-statements.ts), or one update.
 */
interface Group {
  op: WriteOp
  entries: Entry[]
  texts: string[]
  /** The run's state as the merged row has it (an insert's group). */
  state?: string
  /** The insert's `late` columns, still to take (dropped when an update settles the run in the batch). */
  late?: () => OpRow
}

/**
 * Group commit of the run table's hot writes: writes queued in one turn of the event loop go to
 * the database together, in queue order (SQLite: one transaction; PostgreSQL: pipelined on one
 * connection), and a run's insert absorbs the updates queued after it in the same batch, so a short
 * run's start and settle are one statement. A waited write is written at the next turn
 * (`setImmediate`); a lazy one (nobody waits for it) within `LAZY_FLUSH_MS`, or with the next
 * waited write, whichever comes first. One batch runs at a time.
 */
export class GroupCommit {
  private queue: Entry[] = []
  private immediate: NodeJS.Immediate | undefined
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> = Promise.resolve()
  private closed = false
  /**
   * Logged records whose batch failed, not in the database yet (being tried again, or kept for the next
   * start): a mark in the run log covers every record before it, so the log is marked only below the oldest.
   */
  private readonly unwritten = new Set<number>()
  /** The highest logged record a written batch held, and the run log's mark. */
  private writtenSeq = 0
  private marked = 0
  /** Inserts queued or in the batch being written, by run id: a logged record of that run logs its insert too. */
  private readonly inserts = new Map<string, Entry>()
  /** Batches flushed so far: an entry queued since the last flush carries this number. */
  private batches = 0
  /** Unwaited start records given up on (their retries spent), by run id, oldest first (bounded: `MAX_LOST_STARTS`). */
  private readonly lostStarts = new Map<string, WriteOp>()

  /** `log`: the run log `writeLogged` appends to; `late`: reports an unwaited write that failed, or a logged one that matched nothing. */
  constructor(
    private readonly writer: DirectWriter,
    private readonly log?: RunLog,
    private readonly late?: (op: WriteOp, error?: unknown) => void,
    /** @internal The wait before a retry (a test of many failing batches shortens it). */ private readonly retryMs = RETRY_MS,
  ) {}

  get pending(): number { return this.queue.length }

  /** Queues `op`; resolves with its rows matched (an insert: 1, or 0 when the id exists) once its batch is written. */
  write(op: WriteOp, lazy = false): Promise<number> {
    if (this.closed) return Promise.reject(new Error('checkpoints: the store is stopping; the write was not queued'))
    return new Promise<number>((resolve, reject) => this.push({ op, resolve, reject }, lazy))
  }

  /** Queues `op` with nobody waiting for it (no promise): written within `LAZY_FLUSH_MS`; `late` gets its error. */
  writeLazy(op: WriteOp): void {
    if (this.closed) return this.late?.(op, new Error('checkpoints: the store is stopping; the write was not queued'))
    this.push({ op }, true)
  }

  /**
   * Queues an update and appends it to the run log (with its run's insert, when that is not written
   * yet): true once appended, before the database write; what the write then meets (no row, a
   * settled run, an error) goes to `late`. False without a log or with a full one: use `write`.
   */
  writeLogged(op: WriteOp): boolean {
    if (!this.log || this.closed || op.kind !== 'update' || this.log.full) return false
    const insert = this.inserts.get(op.id) ?? this.retryLostStart(op)
    if (insert && this.mergeSettle(insert, op)) return true
    const seq = this.log.append(insert ? [encodeOp(insert.op), encodeOp(op)] : [encodeOp(op)])
    if (seq === undefined) return false
    this.push({ op, seq }, false)
    return true
  }

  /**
   * A settle of a run whose insert is still queued (not yet handed to the writer) is merged into that
   * insert now, as the batch would merge it: one row, encoded once, one line in the run log, one entry
   * (the insert's, which takes the line). Its late columns are dropped (a settled run is never restored),
   * and the row keeps its start time (`createdAt`). False when it cannot be: another settle, not queued.
   */
  private mergeSettle(insert: Entry, op: WriteOp & { kind: 'update' }): boolean {
    const start = insert.op
    if (start.kind !== 'insert' || op.changes.state !== 'settled' || insert.seq || insert.batch !== this.batches) return false
    const given = start.given
    given.createdAt ??= given.updatedAt
    Object.assign(given, op.changes)
    start.late = undefined
    start.text = undefined
    insert.seq = this.log!.append([encodeOp(start)])
    this.immediate ??= setImmediate(this.flushNow)
    return true
  }

  /**
   * A settle of a run whose start record was given up on: the start is queued again, for the settle to merge into
   * (else the settle, logged and then written, would update no row, and the next start would not write it either).
   */
  private retryLostStart(op: WriteOp & { kind: 'update' }): Entry | undefined {
    const start = op.changes.state === 'settled' ? this.lostStarts.get(op.id) : undefined
    if (!start) return undefined
    this.lostStarts.delete(op.id)
    const entry: Entry = { op: start }
    this.push(entry, true)
    return entry
  }

  private push(entry: Entry, lazy: boolean): void {
    entry.batch = this.batches
    this.queue.push(entry)
    const { op } = entry
    if (op.kind === 'insert') this.inserts.set(op.id, entry)
    else if (op.changes.state === 'settled') {
      // A settled run is never restored from its start record: its late columns will not be taken
      // (coalesce drops them in the batch), so what they would read (the run, its transcript) is let go now.
      const insert = this.inserts.get(op.id)?.op
      if (insert?.kind === 'insert') insert.late = undefined
    }
    if (!lazy) this.immediate ??= setImmediate(this.flushNow)
    // A lazy timer still pending from an earlier write fires sooner than this one's bound, never later:
    // it is kept across flushes (a flush that finds the queue empty writes nothing), not made per write.
    else if (!this.timer && !this.immediate) {
      this.timer = setTimeout(this.flushLate, LAZY_FLUSH_MS)
      this.timer.unref?.()
    }
  }

  private readonly flushNow = () => this.flush()
  private readonly flushLate = () => {
    this.timer = undefined
    this.flush()
  }

  /**
   * Writes everything queued now and resolves when it is written (or failed, its retries spent). Bounded:
   * it goes round again only for writes queued again after a failure, never for writes that came since.
   */
  async drain(): Promise<void> {
    for (let round = 0; round <= RETRIES; round++) {
      if (this.queue.length) this.flush()
      await this.running
      if (!this.queue.some((entry) => entry.tries)) return
    }
  }

  /** Writes what is queued and refuses later writes. */
  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.timer)
    this.timer = undefined
    await this.drain()
  }

  private flush(): void {
    if (this.immediate) clearImmediate(this.immediate)
    this.immediate = undefined
    const batch = this.queue
    if (!batch.length) return
    this.queue = []
    this.batches++
    this.running = this.running.then(() => this.write1(batch))
  }

  /** Entries written (or failed for good): their inserts are no longer pending, and the run log learns which records are in. */
  private written(entries: Entry[], failed = false): void {
    for (const entry of entries) {
      if (entry.op.kind === 'insert' && this.inserts.get(entry.op.id) === entry) this.inserts.delete(entry.op.id)
      if (!entry.seq) continue
      // Failed for good (its retries spent, or the store stops): the log keeps it, and the next start writes it.
      if (failed) this.unwritten.add(entry.seq)
      else this.unwritten.delete(entry.seq)
      if (entry.seq > this.writtenSeq) this.writtenSeq = entry.seq
    }
    let mark = this.writtenSeq
    for (const seq of this.unwritten) if (seq <= mark) mark = seq - 1
    if (mark <= this.marked) return
    this.marked = mark
    try {
      this.log!.written(mark)
    } catch (error) {
      // The log could not be marked (the disk): a restart writes these records again, with the same values.
      this.late?.(entries[entries.length - 1].op, error)
    }
  }

  private async write1(flushed: Entry[]): Promise<void> {
    // Writes queued again after a failed batch go first, ahead of a batch flushed while they waited: that batch may hold
    // a later write of their run (a logged settle of a run whose start is being retried), which must not pass them.
    const retried = this.queue.some((entry) => entry.tries) ? this.takeRetried() : NO_ENTRIES
    const batch = retried.length ? [...retried, ...flushed] : flushed
    const groups = coalesce(batch)
    let results: number[]
    try {
      for (const group of groups) if (group.late) takeLate(group)
      results = await this.writer.run(groups.map((group) => group.texts))
    } catch (error) {
      await this.failed(batch, error)
      return
    }
    let unwritten: Set<Entry> | undefined
    for (const [index, group] of groups.entries()) {
      if (group.op.kind !== 'insert' || results[index] !== 0) {
        for (const entry of group.entries) this.done(entry, results[index])
        continue
      }
      // An insert of an existing id runs as updates; when they fail, its writes fail as a batch does (tried again, or kept).
      const error = await this.notNew(group)
      if (error === undefined) continue
      for (const entry of group.entries) (unwritten ??= new Set()).add(entry)
      await this.failed(group.entries, error)
    }
    // After an insert of an existing id ran as updates (notNew): only then is the rest of the batch in.
    this.written(unwritten ? batch.filter((entry) => !unwritten!.has(entry)) : batch)
  }

  /** A batch failed: its waited writes fail; the unwaited ones are queued again (up to RETRIES), unless the store stops. */
  private async failed(batch: Entry[], error: unknown): Promise<void> {
    const again: Entry[] = []
    const lost: Entry[] = []
    for (const entry of batch) (!entry.reject && !this.closed && (entry.tries ?? 0) < RETRIES ? again : lost).push(entry)
    for (const entry of lost) {
      this.fail(entry, error)
      if (entry.op.kind === 'insert' && !entry.reject && !this.closed) this.keepLostStart(entry.op)
    }
    this.written(lost, true)
    if (!again.length) return
    for (const entry of again) {
      entry.tries = (entry.tries ?? 0) + 1
      if (entry.seq) this.unwritten.add(entry.seq)
    }
    await new Promise((resolve) => setTimeout(resolve, this.retryMs))
    this.queue.unshift(...again)
    this.immediate ??= setImmediate(this.flushNow)
  }

  /** The entries queued again after a failure (in their order), taken out of the queue. */
  private takeRetried(): Entry[] {
    const retried = this.queue.filter((entry) => entry.tries)
    this.queue = this.queue.filter((entry) => !entry.tries)
    return retried
  }

  private keepLostStart(op: WriteOp): void {
    // Only a settle takes it back, and a settled run's late columns are never taken: what they read is let go.
    if (op.kind === 'insert') op.late = undefined
    this.lostStarts.delete(op.id)
    this.lostStarts.set(op.id, op)
    if (this.lostStarts.size > MAX_LOST_STARTS) this.lostStarts.delete(this.lostStarts.keys().next().value!)
  }

  private done(entry: Entry, matched: number): void {
    if (entry.resolve) entry.resolve(matched)
    else if (!matched && entry.op.kind === 'update') this.late?.(entry.op)
  }

  private fail(entry: Entry, error: unknown): void {
    if (entry.reject) entry.reject(error)
    else this.late?.(entry.op, error)
  }

  /** An insert whose id exists: its writes run one by one as updates (what each asked for, in order); the error when they failed. */
  private async notNew(group: Group): Promise<unknown> {
    const ops = group.entries.map((entry) => asUpdate(entry.op))
    try {
      const results = await runOps(this.writer, ops)
      // The insert's own write counts as done once its row is updated.
      group.entries.forEach((entry, index) => this.done(entry, index === 0 ? Math.min(1, results[0]) : results[index]))
      return undefined
    } catch (error) {
      return error ?? new Error('checkpoints: the write failed')
    }
  }
}

/** Merges each update into the insert of its run queued before it in the batch, when the update's guard holds for that row. */
function coalesce(batch: Entry[]): Group[] {
  const groups: Group[] = []
  const inserts = new Map<string, Group>()
  for (const entry of batch) {
    const { op } = entry
    if (op.kind === 'update') {
      const group = inserts.get(op.id)
      if (group && (!op.guard || group.state !== 'settled')) {
        group.texts.push(encodeOp(op))
        if (op.changes.state !== undefined) group.state = op.changes.state
        // A run that settles in the batch is never restored from this record: its late columns are not taken.
        if (op.changes.state === 'settled') group.late = undefined
        group.entries.push(entry)
        continue
      }
      // Not merged: a later update of this run must not jump ahead of this one.
      inserts.delete(op.id)
      groups.push({ op, entries: [entry], texts: [encodeOp(op)] })
      continue
    }
    const group: Group = { op, entries: [entry], texts: [encodeOp(op)], state: op.given.state, late: op.late }
    inserts.set(op.id, group)
    groups.push(group)
  }
  return groups
}

/**
 * Takes an insert's late columns: into its statement, right after the insert (so the updates merged
 * after it win over them), and into what its caller gave, should the id exist.
 */
function takeLate(group: Group): void {
  const { op } = group
  const late = group.late!()
  group.late = undefined
  if (op.kind !== 'insert') return
  const columns: OpRow = {}
  for (const [key, value] of Object.entries(late)) if (value !== undefined) (columns as Record<string, unknown>)[key] = value
  group.texts.splice(1, 0, encodeLate(columns))
  // What an insert of an existing id updates instead (notNew): a later update of the group still comes after it.
  Object.assign(op.given, columns)
}
