import { closeSync, constants, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { CheckpointError } from './errors.js'
import { type SkipLine, unwrittenOf } from './run-log-lines.js'
import type { WriteOp } from './write-ops.js'

// The run log: a local file that holds the run records a caller was told are kept
// (`record(…, { logged: true })`, the journal's settle) until their batch is in the database. The
// main thread writes one line per record with a synchronous write (no fsync: it is in the kernel's
// page cache, which a killed process does not lose), the group commit writes the batch as before,
// and once the batch is committed a short marker line says so. When nothing logged is left to write
// the file is not cut: its first byte is cleared (the file then replays nothing) and the next
// record starts a new pass at the start of the file, over the pages the last one used. Cutting a
// file and growing it again had the kernel free and allocate its pages once per batch, which cost
// the main thread more than the writes themselves (bench/profile/checkpoints-loop.ts). Each line
// carries its pass, so what is left of an earlier, longer pass after the last line is not read. At
// start, the records after the last marker are written again before anything else reads the table:
// a SIGKILL between the append and the database write loses none of them, and a record the database
// already holds is only written again with the same values.

/** Run log files open in this process: each holder's promise resolves when it closes. */
const holders = new Map<string, Promise<void>>()

/** Past this many bytes (a database that does not keep up), logged records are waited for as before. */
const RUN_LOG_MAX_BYTES = 64 * 1024 * 1024
/** A file that grew past this many bytes is cut back to empty once all it holds is written, not reused. */
const RUN_LOG_REUSE_BYTES = 1024 * 1024
/** The most a start reads: the bound, plus one record's line at the largest configured bounds (a transcript, escaped). */
const RUN_LOG_READ_BYTES = RUN_LOG_MAX_BYTES + 192 * 1024 * 1024

/** Where a start reports the run log lines it does not replay (the store's logger). */
interface RunLogWarn { warn(format: string, ...param: unknown[]): void }

export class RunLog {
  private fd: number
  /** The last record appended. */
  private appended = 0
  /** Where the next line goes (what the file holds past it is left from an earlier pass), and the file's length. */
  private at = 0
  private size = 0
  /** The pass the lines now written carry. */
  private pass = 1

  /** Runs once when the log closes (lets the next store of this file open it). */
  closed?: () => void

  private constructor(readonly file: string, fd: number) {
    this.fd = fd
  }

  /** Opens (creating its directory) `file`; gives the records an earlier start logged and did not see written, oldest first. */
  static open(file: string, warn?: RunLogWarn): { log: RunLog; unwritten: WriteOp[][] } {
    mkdirSync(dirname(file), { recursive: true })
    // Written at an offset (a file opened to append ignores it).
    const fd = openChecked(file, constants.O_RDWR | constants.O_CREAT)
    try {
      return { log: new RunLog(file, fd), unwritten: unwrittenOf(readFileSync(fd, 'utf8'), skipper(file, warn)) }
    } catch (error) {
      closeSync(fd)
      throw error
    }
  }

  /** Past its bound: records are not appended (the database is waited for, as without a log). */
  get full(): boolean {
    return this.at >= RUN_LOG_MAX_BYTES
  }

  /** Appends a record's ops (their texts, `encodeOp`); its seq, or undefined when the log is full (then the database is waited for). */
  append(ops: string[]): number | undefined {
    if (this.full) return undefined
    const seq = ++this.appended
    this.put(`{"p":${this.pass},"s":${seq},"o":[${ops.join(',')}]}\n`)
    return seq
  }

  /** Records up to `seq` are in the database: when that is all of them the file replays nothing (a new pass begins), else it is marked. */
  written(seq: number): void {
    if (seq < this.appended) return this.put(`{"p":${this.pass},"c":${seq}}\n`)
    if (this.at === 0) return
    this.pass++
    this.at = 0
    if (this.size > RUN_LOG_REUSE_BYTES) return this.clear()
    // A blank first line: nothing to replay. The next record's line overwrites it.
    writeSync(this.fd, '\n', 0)
  }

  private put(line: string): void {
    this.at += writeSync(this.fd, line, this.at)
    if (this.at > this.size) this.size = this.at
  }

  /** Empties the file once everything it held is in the database (the replay at start). */
  clear(): void {
    ftruncateSync(this.fd, 0)
    this.at = 0
    this.size = 0
  }

  close(): void {
    if (this.fd < 0) return
    closeSync(this.fd)
    this.fd = -1
    this.closed?.()
  }
}

/** The records the run log at `file` holds after its last commit marker (what a start writes again). */
export function unwrittenIn(file: string, warn?: RunLogWarn): WriteOp[][] {
  const fd = openChecked(file, constants.O_RDONLY)
  try {
    return unwrittenOf(readFileSync(fd, 'utf8'), skipper(file, warn))
  } finally {
    closeSync(fd)
  }
}

function skipper(file: string, warn: RunLogWarn | undefined): SkipLine {
  return (line, problem) => warn?.warn('%s', `CHECKPOINT_INVALID: run log ${file} line ${line}: ${problem}; `
    + 'it is skipped (not written to the database). The file was edited or damaged: the rest of it is replayed; a run whose settle it was comes back interrupted.')
}

/**
 * Opens the run log without following a symbolic link or waiting on a FIFO, and refuses what is not a regular file
 * or far past its bound (CHECKPOINT_RUN_LOG): reading it would hang the start, or read a device without end.
 */
function openChecked(file: string, flags: number): number {
  let fd: number
  try {
    fd = openSync(file, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o666)
  } catch (error) {
    const code = (error as { code?: string }).code
    const what = code === 'ELOOP' ? 'is a symbolic link' : code === 'EISDIR' ? 'is a directory' : `cannot be opened (${(error as Error).message})`
    throw runLogError(file, what, error)
  }
  const stat = fstatSync(fd)
  const what = !stat.isFile() ? 'is not a regular file (a FIFO, socket or device)'
    : stat.size > RUN_LOG_READ_BYTES ? `is ${stat.size} bytes, past the ${RUN_LOG_READ_BYTES} a run log can hold` : undefined
  if (what === undefined) return fd
  closeSync(fd)
  throw runLogError(file, what)
}

function runLogError(file: string, what: string, cause?: unknown): CheckpointError {
  return new CheckpointError('CHECKPOINT_RUN_LOG', `the run log ${file} ${what}: move it aside (a regular file this store wrote `
    + 'is replayed at start), or set runLog to another path or \'off\'.', cause === undefined ? undefined : { cause })
}

/**
 * The run log's file: `setting` ('' chooses: beside a SQLite file, none for PostgreSQL or memory;
 * 'off': none; else a path, relative to `baseDir`).
 */
export function runLogFile(setting: string, sqliteFile: string | undefined, baseDir: string): string | undefined {
  if (setting === 'off') return undefined
  if (setting) return resolve(baseDir, setting)
  return sqliteFile && `${sqliteFile}.runlog`
}

/** Opens the run log at `file` and writes what an earlier start logged and did not see written (one batch), then empties it. */
export async function openRunLog(file: string, run: (ops: WriteOp[]) => Promise<unknown>, warn?: RunLogWarn): Promise<RunLog> {
  // A store started again in this process (a reload) opens the file once the store before it closed it
  // (its stop writes what it queued, then cuts the file): the two never write it at once.
  const before = holders.get(file)
  let release!: () => void
  const mine = new Promise<void>((resolve) => { release = resolve })
  holders.set(file, mine)
  const free = () => {
    release()
    if (holders.get(file) === mine) holders.delete(file)
  }
  await before
  let opened: { log: RunLog; unwritten: WriteOp[][] }
  try {
    opened = RunLog.open(file, warn)
  } catch (error) {
    free()
    throw error
  }
  const { log, unwritten } = opened
  log.closed = free
  try {
    if (unwritten.length) await run(unwritten.flat())
    log.clear()
  } catch (error) {
    log.close()
    throw error
  }
  return log
}
