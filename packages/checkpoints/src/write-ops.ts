import type { RunRow } from './records.js'

// What the run table's direct writers (direct-writes.ts, postgres-writer.ts) take and give.

/** One write of a batch: a new run's whole row, or the changed columns of an existing run. */
export type WriteOp =
  /** `given`: the columns the caller named (what an insert of an id that exists updates instead). */
  /** `late`: columns taken when the batch is written (a lazy start's transcript), unless the run settles in that batch. */
  | { kind: 'insert'; row: RunRow; given: Partial<RunRow>; late?: () => Partial<RunRow> }
  /** `guard`: only if the run is not settled now (a save that would move a settled run to another state). */
  | { kind: 'update'; id: string; changes: Partial<RunRow>; guard: boolean }

/** Per op: an insert's 1 (inserted) or 0 (the id exists); an update's rows matched (0 or 1). */
export interface DirectWriter {
  readonly kind: 'sqlite' | 'postgres'
  /** The SQLite file it writes (where the run log goes by default). */
  readonly file?: string
  run(ops: WriteOp[]): Promise<number[]>
  /** Resolves once the writer can write (a writer thread started, its connection open). */
  ready?(): Promise<void>
  close(): Promise<void>
}
