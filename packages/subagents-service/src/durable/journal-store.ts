// The part of `ctx.checkpoints` (@cordis-subagents/checkpoints) the durable journal uses. The
// service reads the store through `ctx.get('checkpoints')` and never imports that package, so a
// host without it carries no database code (test/durable-journal.slow.spec.ts checks the real store
// fits this shape at compile time).

/** States of a stored run (the store's `RunState`). */
type StoredRunState = 'running' | 'parked' | 'interrupted' | 'closed' | 'settled'

/** The fields the journal writes (the store's `RunCheckpoint`). */
/** A change of state with the fields written in the same conditional write (the checkpoints store's `RunTransition`). */
type StoredRunTransition = Omit<StoredRunCheckpoint, 'id'> & { state: StoredRunState }

export interface StoredRunCheckpoint {
  id: string
  path?: string
  parent?: string
  provider?: string
  agent?: string
  state?: StoredRunState
  stopReason?: string
  usage?: Record<string, number>
  work?: Record<string, number>
  transcript?: unknown
  turn?: number
  result?: string
  background?: boolean
  label?: string
  delivery?: string
  sessionId?: string
  taskId?: string
  agentUrl?: string
}

/** A stored run as the store returns it (the fields the service reads). */
export interface StoredRun {
  id: string
  path: string
  root: string
  parent: string
  provider: string
  agent: string
  state: StoredRunState
  stopReason?: string
  transcript?: unknown
  result?: string
  usage: Record<string, number>
  work: Record<string, number>
  background: boolean
  label: string
  delivery: string
  sessionId?: string
  taskId?: string
  agentUrl?: string
  host: string
  updatedAt: Date
}

interface StoredQuestion {
  id: string
  runId: string
  path: string
  question: string
  state: 'pending' | 'answered' | 'cancelled'
  answer?: string
}

/** What the store's task-key claim hashes. */
export interface StoredTaskKey {
  parent: string
  provider: string
  agent: string
  prompt: string
}

interface RunListFilter {
  state?: StoredRunState | StoredRunState[]
  parent?: string
  root?: string
  background?: boolean
  /** Runs of this host only (a store that ignores it lists all; the caller checks `host` again). */
  host?: string
  /** Without `transcript` and `result` (a store that ignores it reads them). */
  brief?: boolean
  limit?: number
}

export interface CheckpointStore {
  readonly host: string
  readonly limits: { readonly maxTextBytes: number }
  save(checkpoint: StoredRunCheckpoint): Promise<StoredRun>
  /** `save` without reading the record back; `created`: a run this host just made (one insert). */
  /** `lazy`: a new run's insert that resolves once queued (written within a few ms, with the run's next write). */
  /** `deferred`: a new run's fields taken when its insert is written (not at all if it settles in that batch). */
  record?(checkpoint: StoredRunCheckpoint, options?: {
    created?: boolean
    lazy?: boolean
    deferred?: () => Pick<StoredRunCheckpoint, 'transcript' | 'sessionId' | 'taskId' | 'agentUrl'>
    /** An update that resolves once in the store's local run log, before the database write (a store without one waits). */
    logged?: boolean
  }): Promise<void>
  /** `record`, but undefined when nothing is left to wait for (a lazy insert queued, a logged update in the run log). */
  recordNow?(checkpoint: StoredRunCheckpoint, options?: Parameters<NonNullable<CheckpointStore['record']>>[1]): Promise<void> | undefined
  /** Resolves once the store's queued writes are written. */
  drain?(): Promise<void>
  load(id: string): Promise<StoredRun | undefined>
  list(filter?: RunListFilter): Promise<StoredRun[]>
  /**
   * Atomic compare-and-set of a run's state: true when this call moved it (of racing callers, one does). `to` may carry
   * fields written with the state in the same conditional write (a take-over's close and its note).
   */
  transition(id: string, from: StoredRunState | StoredRunState[], to: StoredRunState | StoredRunTransition): Promise<boolean>
  /** Ended (settled or closed) → running for a continue's new turn, atomically; false when the run is not ended. */
  continueRun(id: string): Promise<boolean>
  readonly tasks: {
    claim(input: StoredTaskKey, runId: string): Promise<{ key: string; claimed: boolean; runId: string }>
    get(input: StoredTaskKey): Promise<{ key: string; runId: string } | undefined>
    release(key: string, runId: string): Promise<boolean>
  }
  readonly questions: {
    ask(ask: { runId: string; path: string; question: string; id?: string }): Promise<StoredQuestion>
    answer(id: string, answer: string): Promise<StoredQuestion>
    cancel(id: string): Promise<StoredQuestion>
    pending(filter?: { runId?: string }): Promise<StoredQuestion[]>
    get(id: string): Promise<StoredQuestion | undefined>
  }
}

/** The id a run's question is stored under: question ids are unique only within their run. */
export function storedQuestionId(runId: string, questionId: string): string {
  return `${runId}:${questionId}`
}
