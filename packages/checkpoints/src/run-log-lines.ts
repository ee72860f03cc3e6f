import { isCount } from '@cordis-subagents/shared'
import { MAX_ID_LENGTH, MAX_PATH_LENGTH, RUN_COLUMNS, RUN_STATES, type RunState } from './records.js'
import type { OpRow, WriteOp } from './write-ops.js'

// Reading the run log's lines back at start (run-log.ts). The file is read, not trusted: a line or an
// op that is not what `RunLog.append` writes (an edited or damaged file) is reported and skipped, so
// it neither stops the start nor rolls back the batch of the records around it, and it is held to the
// checks a write is (codec.ts `toRow`): known columns, a known state, a whole turn, text ids.

/**
 * One line: a record (its seq and ops: the run's pending insert, if any, then its update), or a commit
 * marker; `p`, the pass it was written in (absent in a file of an earlier version, which was cut instead).
 */
type Line = { p?: number; s: number; o: unknown[] } | { p?: number; c: number }

/** A line (its 1-based number and what is wrong with it) that is not replayed. */
export type SkipLine = (line: number, problem: string) => void

type Check = (value: unknown) => boolean
const text = (max: number, empty = true): Check => (value) => typeof value === 'string' && value.length <= max && (empty || value !== '')
const nullable = (check: Check): Check => (value) => value === null || check(value)
const json = (object: boolean): Check => (value) => {
  if (typeof value !== 'string') return false
  try {
    const parsed: unknown = JSON.parse(value)
    return !object || (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
  } catch {
    return false
  }
}
const date: Check = (value) => typeof value === 'number' && Number.isFinite(new Date(value).getTime())
const id = text(MAX_ID_LENGTH, false)
const name = text(MAX_ID_LENGTH)

/** What each column of an op may hold: what `toRow` and the stamp give (dates as epoch ms). */
const COLUMN: Record<string, Check> = {
  id, path: text(MAX_PATH_LENGTH, false), root: id, parent: name, provider: id, agent: name,
  state: (value) => RUN_STATES.includes(value as RunState),
  stopReason: nullable(id), usage: json(true), work: json(true), transcript: nullable(json(false)),
  turn: isCount, result: nullable((value) => typeof value === 'string'), background: (value) => typeof value === 'boolean',
  label: name, delivery: text(32), sessionId: nullable(id), taskId: nullable(id), agentUrl: nullable(text(MAX_PATH_LENGTH, false)),
  host: id, instance: id, createdAt: date, updatedAt: date,
}
/** What an insert needs: what `save` needs of a new run. */
const INSERT_NEEDS = ['id', 'path', 'provider', 'state']

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** What is wrong with an op's columns, or undefined. */
function rowProblem(row: unknown, insert: boolean): string | undefined {
  if (!isObject(row)) return 'its columns are not an object'
  for (const key in row) {
    if (!RUN_COLUMNS.includes(key as never)) return `unknown column ${JSON.stringify(key)}`
    if (row[key] !== undefined && !COLUMN[key]!(row[key])) return `column ${key} holds ${JSON.stringify(row[key])?.slice(0, 60)}`
  }
  const missing = insert && INSERT_NEEDS.find((key) => row[key] === undefined)
  return missing ? `an insert without ${missing}` : undefined
}

/**
 * An op of a line as a write, or what is wrong with it. An update that changes the state is always guarded
 * (never written over a settled run), whatever its line says: a replay never moves a settled run back.
 */
function revive(op: unknown): WriteOp | string {
  if (Array.isArray(op) && op[0] === 0 && op.length === 2) {
    const problem = rowProblem(op[1], true)
    if (problem) return problem
    const given = op[1] as OpRow
    // A line the store wrote carries these (`toRow`, the stamp); one that does not still makes a row every read takes.
    const row = { root: given.path!.split('/')[0], host: '', instance: '', updatedAt: Date.now(), ...given }
    return { kind: 'insert', id: given.id!, given: row }
  }
  if (Array.isArray(op) && op[0] === 1 && op.length === 4 && id(op[1]) && (op[2] === 0 || op[2] === 1)) {
    const changes = op[3] as OpRow
    const problem = rowProblem(changes, false) ?? (changes.id !== undefined && changes.id !== op[1] ? 'an update whose changes name another id' : undefined)
    return problem ?? { kind: 'update', id: op[1] as string, changes, guard: changes.state !== undefined && changes.state !== 'settled' }
  }
  return 'an op that is neither [0, columns] nor [1, id, guard, changes]'
}

/** A parsed line as a `Line`, or undefined when it is not one. */
function asLine(value: unknown): Line | undefined {
  if (!isObject(value) || (value.p !== undefined && !isCount(value.p))) return undefined
  if ('c' in value) return isCount(value.c) ? value as Line : undefined
  return isCount(value.s) && Array.isArray(value.o) ? value as Line : undefined
}

/**
 * The records of `text` after its last commit marker. The pass is the first line's: the lines of that
 * pass are read up to the first line that is not one of them (left from an earlier pass, or torn by a
 * crash mid-write); a blank first line is a file whose records were all written. A file of an earlier
 * version (no pass) is read whole, a torn line left out. JSON that is not a line, and a record with an
 * op that is not one, are given to `skip` and left out.
 */
export function unwrittenOf(text: string, skip: SkipLine): WriteOp[][] {
  let records: Array<{ s: number; ops: WriteOp[] }> = []
  let pass: number | undefined
  let first = true
  let last = 0
  for (const [index, raw] of text.split('\n').entries()) {
    let parsed: unknown
    try {
      parsed = raw ? JSON.parse(raw) : undefined
    } catch {
      parsed = undefined
    }
    const line = asLine(parsed)
    if (parsed !== undefined && !line) {
      skip(index + 1, 'not a record or a commit marker')
      continue
    }
    if (first) pass = line?.p
    first = false
    if (pass !== undefined) {
      // A record's seq only grows within a pass: a line of an earlier pass never continues it.
      if (!line || line.p !== pass || ('s' in line && line.s <= last)) break
    } else if (!line || line.p !== undefined) {
      if (index === 0 && !line) break
      continue
    }
    if ('c' in line) {
      const marker = line.c
      records = records.filter((record) => record.s > marker)
      continue
    }
    last = line.s
    const ops = line.o.map(revive)
    const problem = ops.find((op) => typeof op === 'string')
    if (problem !== undefined || !ops.length) skip(index + 1, (problem as string | undefined) ?? 'a record without ops')
    else records.push({ s: line.s, ops: ops as WriteOp[] })
  }
  return records.map((record) => record.ops)
}
