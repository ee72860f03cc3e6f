import type { Context } from 'cordis'

/**
 * A run's lifecycle as the store sees it. `running` and `parked` are live; `interrupted` is a
 * running run whose host restarted (resumable from its last completed turn); `closed` and
 * `settled` are ended (swept after the retention).
 */
export type RunState = 'running' | 'parked' | 'interrupted' | 'closed' | 'settled'
export const RUN_STATES: readonly RunState[] = ['running', 'parked', 'interrupted', 'closed', 'settled']
export const ENDED_STATES: readonly RunState[] = ['closed', 'settled']

/** How to reach a run's child again after a restart. */
export interface Reattach {
  /** ACP: the agent's session id (session/load). */
  sessionId?: string
  /** A2A: the remote task id and the agent's URL. */
  taskId?: string
  agentUrl?: string
}

/** What a caller saves for one run (keyed by `id`); every field but `id` may be left out on update. */
export interface RunCheckpoint extends Reattach {
  /** The run id (a handle's id). */
  id: string
  /** Handle path from the root: ids joined by '/', the last one is `id`. */
  path?: string
  /** The parent's handle id ('' for a root run). */
  parent?: string
  provider?: string
  agent?: string
  state?: RunState
  stopReason?: string
  /** Token usage and work tallies so far (small JSON objects). */
  usage?: Record<string, number>
  work?: Record<string, number>
  /** The transcript as of the last completed turn (any JSON; bounded by `maxTranscriptBytes`). */
  transcript?: unknown
  /** How many turns `transcript` holds. */
  turn?: number
  /** The final result text (bounded by `maxTextBytes`). */
  result?: string
  /** A background-book entry: its label and where its result went. */
  background?: boolean
  label?: string
  delivery?: string
}

/** A stored run, as `load` and `list` return it. */
export interface StoredRun extends Required<Omit<RunCheckpoint, 'transcript' | 'stopReason' | 'result' | 'sessionId' | 'taskId' | 'agentUrl'>> {
  /** The first id of `path`. */
  root: string
  transcript?: unknown
  stopReason?: string
  result?: string
  sessionId?: string
  taskId?: string
  agentUrl?: string
  /** The host name and start that last saved it. */
  host: string
  instance: string
  createdAt: Date
  updatedAt: Date
}

export type QuestionState = 'pending' | 'answered' | 'cancelled'

export interface QuestionRecord {
  id: string
  runId: string
  path: string
  question: string
  state: QuestionState
  answer?: string
  askedAt: Date
  answeredAt?: Date
}

export interface TaskKeyRecord {
  /** sha256 (hex) of the parent, provider, agent and prompt. */
  key: string
  parent: string
  runId: string
  host: string
  claimedAt: Date
}

/** Rows as stored: JSON fields are text we serialise ourselves, so their size is checked exactly. */
export interface RunRow {
  id: string
  path: string
  root: string
  parent: string
  provider: string
  agent: string
  state: string
  stopReason: string | null
  usage: string
  work: string
  transcript: string | null
  turn: number
  result: string | null
  background: boolean
  label: string
  delivery: string
  sessionId: string | null
  taskId: string | null
  agentUrl: string | null
  host: string
  instance: string
  createdAt: Date
  updatedAt: Date
}

/** Every column of the run table, in one fixed order (the direct writers' inserts). */
export const RUN_COLUMNS: ReadonlyArray<keyof RunRow> = [
  'id', 'path', 'root', 'parent', 'provider', 'agent', 'state', 'stopReason', 'usage', 'work', 'transcript', 'turn', 'result',
  'background', 'label', 'delivery', 'sessionId', 'taskId', 'agentUrl', 'host', 'instance', 'createdAt', 'updatedAt',
]

export type QuestionRow = Omit<QuestionRecord, 'answer' | 'answeredAt'> & { answer: string | null; answeredAt: Date | null }

export const TABLES = { runs: 'subagent_run', questions: 'subagent_question', taskKeys: 'subagent_task_key' } as const

declare module 'minato' {
  interface Tables {
    subagent_run: RunRow
    subagent_question: QuestionRow
    subagent_task_key: TaskKeyRecord
  }
}

export const MAX_ID_LENGTH = 255
export const MAX_PATH_LENGTH = 2048

/** Declares the three tables (each driver creates or extends them at start). */
export function declareTables(ctx: Context): void {
  const id = { type: 'string', length: MAX_ID_LENGTH } as const
  const name = { type: 'string', length: MAX_ID_LENGTH, initial: '' } as const
  ctx.model.extend(TABLES.runs, {
    id,
    path: { type: 'string', length: MAX_PATH_LENGTH },
    root: name,
    parent: name,
    provider: name,
    agent: name,
    state: { type: 'string', length: 16 },
    stopReason: { type: 'string', length: MAX_ID_LENGTH, nullable: true },
    usage: { type: 'text', initial: '{}' },
    work: { type: 'text', initial: '{}' },
    transcript: { type: 'text', nullable: true },
    turn: { type: 'unsigned', initial: 0 },
    result: { type: 'text', nullable: true },
    background: { type: 'boolean', initial: false },
    label: name,
    delivery: { type: 'string', length: 32, initial: '' },
    sessionId: { type: 'string', length: MAX_ID_LENGTH, nullable: true },
    taskId: { type: 'string', length: MAX_ID_LENGTH, nullable: true },
    agentUrl: { type: 'string', length: MAX_PATH_LENGTH, nullable: true },
    host: name,
    instance: name,
    createdAt: 'timestamp',
    updatedAt: 'timestamp',
  }, { primary: 'id', indexes: ['state', 'updatedAt', 'parent', 'root'] })
  ctx.model.extend(TABLES.questions, {
    id,
    runId: id,
    path: { type: 'string', length: MAX_PATH_LENGTH },
    question: 'text',
    state: { type: 'string', length: 16 },
    answer: { type: 'text', nullable: true },
    askedAt: 'timestamp',
    answeredAt: { type: 'timestamp', nullable: true },
  }, { primary: 'id', indexes: ['state', 'runId'] })
  ctx.model.extend(TABLES.taskKeys, {
    key: { type: 'string', length: 64 },
    parent: name,
    runId: id,
    host: name,
    claimedAt: 'timestamp',
  }, { primary: 'key', indexes: ['claimedAt'] })
}
