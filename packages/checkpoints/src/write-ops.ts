import type { RunRow } from './records.js'

// What the run table's direct writers (direct-writes.ts, sqlite-writer.ts, postgres-writer.ts) take
// and give. A write is encoded once, as the JSON text the run log holds (run-log.ts): the same text
// goes into the log line and into the batch a writer thread is handed, and the thread builds the
// statement from it (writer-statements.ts), so the main thread neither copies rows nor builds SQL.

/** A run's columns as a write carries them: dates as epoch milliseconds. */
export type OpRow = Omit<Partial<RunRow>, 'createdAt' | 'updatedAt'> & { createdAt?: number; updatedAt?: number }

/** One write of a batch: a new run's given columns (the rest of its row at initial values), or the changed columns of an existing run. */
export type WriteOp =
  /** `given`: the columns the caller named (with host, instance and updatedAt); what an insert of an id that exists updates instead. */
  /** `late`: columns taken when the batch is written (a lazy start's transcript), unless the run settles in that batch. */
  | { kind: 'insert'; id: string; given: OpRow; late?: () => OpRow; text?: string }
  /** `guard`: only if the run is not settled now (a save that would move a settled run to another state). */
  | { kind: 'update'; id: string; changes: OpRow; guard: boolean; text?: string }

/**
 * The op's text (made once, then kept on it): `[0, given]` for an insert, `[1, id, guard, changes]`
 * for an update (its changes may name the id too: the same one); `[2, columns]` (late columns of the
 * insert before it) only ever appears in a batch.
 */
export function encodeOp(op: WriteOp): string {
  if (op.text !== undefined) return op.text
  op.text = op.kind === 'insert' ? `[0,${JSON.stringify(op.given)}]` : `[1,${JSON.stringify(op.id)},${op.guard ? 1 : 0},${JSON.stringify(op.changes)}]`
  return op.text
}

/** The text of an insert's late columns. */
export function encodeLate(columns: OpRow): string {
  return `[2,${JSON.stringify(columns)}]`
}

/**
 * Per group: an insert's 1 (inserted) or 0 (the id exists); an update's rows matched (0 or 1). A group
 * is the texts of one statement: an insert, then its late columns and the updates merged into it; or one update.
 */
export interface DirectWriter {
  readonly kind: 'sqlite' | 'postgres'
  /** The SQLite file it writes (where the run log goes by default). */
  readonly file?: string
  run(groups: string[][]): Promise<number[]>
  /** Resolves once the writer can write (a writer thread started, its connection open). */
  ready?(): Promise<void>
  /** Ends the writer (after what it was given; `now`: at once, its batch left unfinished). */
  close(now?: boolean): Promise<void>
}

/** Writes `ops` one statement each, in order. */
export function runOps(writer: DirectWriter, ops: WriteOp[]): Promise<number[]> {
  return writer.run(ops.map((op) => [encodeOp(op)]))
}

/**
 * Writes what the run log kept again, as a start does: in order, one statement each. An insert whose id exists (its
 * batch ran before the connection dropped, then counted as failed) does nothing, so each such run's records from that
 * insert on are written once more, in order, its inserts as the updates of its row: what the insert carries (a settle
 * merged into it) lands as it would have (the live path's rule for such an insert, `GroupCommit`'s `notNew`). Linear in
 * the records, and at most one batch more.
 */
export async function replayOps(writer: DirectWriter, ops: WriteOp[]): Promise<void> {
  const results = await runOps(writer, ops)
  const from = new Map<string, number>()
  ops.forEach((op, index) => {
    if (op.kind === 'insert' && results[index] === 0 && !from.has(op.id)) from.set(op.id, index)
  })
  if (!from.size) return
  const again: WriteOp[] = []
  ops.forEach((op, index) => {
    if (index >= (from.get(op.id) ?? Infinity)) again.push(op.kind === 'insert' ? asUpdate(op) : op)
  })
  await runOps(writer, again)
}

/** An insert as the update of an existing row (only the columns its caller gave); updates as they are. */
export function asUpdate(op: WriteOp): WriteOp {
  if (op.kind === 'update') return op
  // Its start time (a settle merged into it carries one) is the existing row's, not changed.
  const { id, createdAt, ...changes } = op.given
  return { kind: 'update', id: op.id, changes, guard: changes.state !== undefined && changes.state !== 'settled' }
}
