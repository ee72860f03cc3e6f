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

export function toRecord(row: RunRow): StoredRun {
  return {
    id: row.id,
    path: row.path,
    root: row.root,
    parent: row.parent,
    provider: row.provider,
    agent: row.agent,
    state: row.state as RunState,
    stopReason: nonEmpty(row.stopReason),
    usage: JSON.parse(row.usage || '{}'),
    work: JSON.parse(row.work || '{}'),
    transcript: row.transcript === null ? undefined : JSON.parse(row.transcript),
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
