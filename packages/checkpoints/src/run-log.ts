import { closeSync, constants, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { OpRow, WriteOp } from './write-ops.js'

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

/**
 * One line: a record (its seq and ops: the run's pending insert, if any, then its update), or a commit
 * marker; `p`, the pass it was written in (absent in a file of an earlier version, which was cut instead).
 */
type Line = { p?: number; s: number; o: SerialOp[] } | { p?: number; c: number }
/**
 * An insert's given columns (its whole row follows from them), or an update's id, guard and changes;
 * dates as epoch ms. Each is the op's own text (write-ops.ts `encodeOp`), the one its batch carries too.
 */
type SerialOp = [0, OpRow] | [1, string, 0 | 1, OpRow]

/** Run log files open in this process: each holder's promise resolves when it closes. */
const holders = new Map<string, Promise<void>>()

/** Past this many bytes (a database that does not keep up), logged records are waited for as before. */
const RUN_LOG_MAX_BYTES = 64 * 1024 * 1024
/** A file that grew past this many bytes is cut back to empty once all it holds is written, not reused. */
const RUN_LOG_REUSE_BYTES = 1024 * 1024

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
  static open(file: string): { log: RunLog; unwritten: WriteOp[][] } {
    mkdirSync(dirname(file), { recursive: true })
    let text = ''
    try {
      text = readFileSync(file, 'utf8')
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOENT') throw error
    }
    // Written at an offset (a file opened to append ignores it).
    return { log: new RunLog(file, openSync(file, constants.O_RDWR | constants.O_CREAT, 0o666)), unwritten: unwrittenOf(text) }
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
export function unwrittenIn(file: string): WriteOp[][] {
  return unwrittenOf(readFileSync(file, 'utf8'))
}

/**
 * The records of `text` after its last commit marker. The pass is the first line's: the lines of that
 * pass are read up to the first line that is not one of them (left from an earlier pass, or torn by a
 * crash mid-write); a blank first line is a file whose records were all written. A file of an earlier
 * version (no pass) is read whole, a torn line left out.
 */
function unwrittenOf(text: string): WriteOp[][] {
  let records: Array<{ s: number; o: SerialOp[] }> = []
  let pass: number | undefined
  let last = 0
  for (const [index, raw] of text.split('\n').entries()) {
    let line: Line | undefined
    try {
      line = raw ? JSON.parse(raw) as Line : undefined
    } catch {
      line = undefined
    }
    if (index === 0) pass = line?.p
    if (pass !== undefined) {
      // A record's seq only grows within a pass: a line of an earlier pass never continues it.
      if (!line || line.p !== pass || ('s' in line && line.s <= last)) break
    } else if (!line || line.p !== undefined) {
      if (index === 0 && !line) break
      continue
    }
    if ('c' in line) records = records.filter((record) => record.s > line.c)
    else {
      last = line.s
      records.push(line)
    }
  }
  return records.map((record) => record.o.map(revive))
}

function revive(op: SerialOp): WriteOp {
  if (op[0] === 1) return { kind: 'update', id: op[1], guard: op[2] === 1, changes: op[3] }
  return { kind: 'insert', id: op[1].id!, given: op[1] }
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
export async function openRunLog(file: string, run: (ops: WriteOp[]) => Promise<unknown>): Promise<RunLog> {
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
    opened = RunLog.open(file)
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
