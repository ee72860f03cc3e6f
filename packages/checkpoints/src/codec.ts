import { isCount, utf8Length } from '@cordis-subagents/shared'
import { CheckpointError } from './errors.js'
import type { Limits } from './config.js'
import {
  MAX_ID_LENGTH, MAX_PATH_LENGTH, RUN_STATES, type RunCheckpoint, type StoredRun, type RunRow, type RunState,
} from './records.js'

export function checkId(what: string, value: unknown, max = MAX_ID_LENGTH): string {
  if (typeof value !== 'string' || !value || value.length > max) {
    throw new CheckpointError('CHECKPOINT_INVALID', `${what} must be a non-empty string of at most ${max} characters.`)
  }
  return value
}

export function checkState(value: unknown): RunState {
  if (!RUN_STATES.includes(value as RunState)) {
    throw new CheckpointError('CHECKPOINT_INVALID', `state must be one of ${RUN_STATES.join(', ')}, got ${JSON.stringify(value)}.`)
  }
  return value as RunState
}

export function checkText(what: string, value: string, limit: number): string {
  // Every UTF-16 unit is at most 3 bytes of UTF-8: most texts fit without being encoded.
  if (value.length * 3 <= limit) return value
  const bytes = utf8Length(value)
  if (bytes > limit) {
    throw new CheckpointError('CHECKPOINT_TOO_LARGE', `${what} is ${bytes} bytes, over the limit of ${limit} (maxTextBytes); shorten it or raise the limit.`)
  }
  return value
}

function toJson(what: string, value: unknown): string {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (error) {
    throw new CheckpointError('CHECKPOINT_INVALID', `${what} is not serialisable as JSON: ${(error as Error).message}`, { cause: error })
  }
  if (text === undefined) throw new CheckpointError('CHECKPOINT_INVALID', `${what} is not a JSON value.`)
  return text
}

/** The columns a checkpoint sets: only the fields it names, each checked against its bound. */
export function toRow(checkpoint: RunCheckpoint, limits: Limits): Partial<RunRow> {
  const row: Partial<RunRow> = { id: checkId('id', checkpoint.id) }
  const c = checkpoint
  if (c.path !== undefined) {
    row.path = checkId('path', c.path, MAX_PATH_LENGTH)
    const slash = c.path.indexOf('/')
    row.root = checkId('the path\'s root id', slash < 0 ? c.path : c.path.slice(0, slash))
  }
  if (c.parent !== undefined) row.parent = c.parent === '' ? '' : checkId('parent', c.parent)
  for (const key of ['provider', 'agent', 'label', 'sessionId', 'taskId'] as const) {
    if (c[key] !== undefined) row[key] = checkId(key, c[key])
  }
  if (c.agentUrl !== undefined) row.agentUrl = checkId('agentUrl', c.agentUrl, MAX_PATH_LENGTH)
  if (c.delivery !== undefined) row.delivery = checkId('delivery', c.delivery, 32)
  if (c.stopReason !== undefined) row.stopReason = checkId('stopReason', c.stopReason)
  if (c.state !== undefined) row.state = checkState(c.state)
  if (c.usage !== undefined) row.usage = checkText('usage', toJson('usage', c.usage), limits.maxTextBytes)
  if (c.work !== undefined) row.work = checkText('work', toJson('work', c.work), limits.maxTextBytes)
  if (c.result !== undefined) row.result = checkText('result', c.result, limits.maxTextBytes)
  if (c.background !== undefined) row.background = !!c.background
  if (c.turn !== undefined) {
    if (!isCount(c.turn)) throw new CheckpointError('CHECKPOINT_INVALID', `turn must be a whole number, got ${c.turn}.`)
    row.turn = c.turn
  }
  if (c.transcript !== undefined) {
    const text = toJson('transcript', c.transcript)
    const bytes = text.length * 3 <= limits.maxTranscriptBytes ? text.length : utf8Length(text)
    if (bytes > limits.maxTranscriptBytes) {
      throw new CheckpointError('CHECKPOINT_TOO_LARGE',
        `the transcript of run ${c.id} is ${bytes} bytes of JSON, over the limit of ${limits.maxTranscriptBytes} (maxTranscriptBytes): compact it or raise the limit.`)
    }
    row.transcript = text
  }
  return row
}

function nonEmpty(value: string | null): string | undefined {
  return value === null || value === '' ? undefined : value
}

const TEXT_COLUMNS = ['id', 'path', 'root', 'parent', 'provider', 'agent', 'label', 'delivery', 'host', 'instance'] as const

/** A column's stored JSON text, parsed; `object`: it must be a JSON object (usage, work). */
function parsed(row: RunRow, key: 'usage' | 'work' | 'transcript', object: boolean): unknown {
  let value: unknown
  try {
    value = JSON.parse(row[key]!)
  } catch {
    throw damaged(row, `${key} is not JSON`)
  }
  if (object && (typeof value !== 'object' || value === null || Array.isArray(value))) throw damaged(row, `${key} is not a JSON object`)
  return value
}

function damaged(row: RunRow, what: string): CheckpointError {
  return new CheckpointError('CHECKPOINT_INVALID', `stored run ${String(row.id)} is damaged (${what}): it cannot be read or restored; `
    + 'repair its row in the database or remove it (ctx.checkpoints.remove).')
}

/** A stored row as a run; CHECKPOINT_INVALID naming the run when a column holds what no write stores (a damaged or edited row). */
export function toRecord(row: RunRow): StoredRun {
  for (const key of TEXT_COLUMNS) if (typeof row[key] !== 'string') throw damaged(row, `${key} is not text`)
  if (!RUN_STATES.includes(row.state as RunState)) throw damaged(row, `unknown state ${JSON.stringify(row.state)}`)
  if (!isCount(row.turn)) throw damaged(row, `turn ${JSON.stringify(row.turn)} is not a whole number`)
  for (const key of ['createdAt', 'updatedAt'] as const) {
    if (!(row[key] instanceof Date) || Number.isNaN(row[key].getTime())) throw damaged(row, `${key} is not a date`)
  }
  return {
    id: row.id,
    path: row.path,
    root: row.root,
    parent: row.parent,
    provider: row.provider,
    agent: row.agent,
    state: row.state as RunState,
    stopReason: nonEmpty(row.stopReason),
    usage: row.usage ? parsed(row, 'usage', true) as Record<string, number> : {},
    work: row.work ? parsed(row, 'work', true) as Record<string, number> : {},
    // A brief listing did not read it (undefined); a run without one stored it as null.
    transcript: row.transcript == null ? undefined : parsed(row, 'transcript', false),
    turn: row.turn,
    result: row.result ?? undefined,
    background: row.background,
    label: row.label,
    delivery: row.delivery,
    sessionId: nonEmpty(row.sessionId),
    taskId: nonEmpty(row.taskId),
    agentUrl: nonEmpty(row.agentUrl),
    host: row.host,
    instance: row.instance,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  }
}

/** The runs of `rows`; a damaged one (`toRecord`'s CHECKPOINT_INVALID) is given to `skipped` and left out, so the rest still read. */
export function toRecords(rows: RunRow[], skipped: (error: CheckpointError) => void): StoredRun[] {
  const runs: StoredRun[] = []
  for (const row of rows) {
    try {
      runs.push(toRecord(row))
    } catch (error) {
      if (!(error instanceof CheckpointError)) throw error
      skipped(error)
    }
  }
  return runs
}
