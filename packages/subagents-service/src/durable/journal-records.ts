import type { Context, Logger } from 'cordis'
import { describeError, headBytes, headChars, withoutCallerTracing } from '@cordis-subagents/shared'
import type { JournalledRun } from '../run/journal-port.js'
import type { SubagentOutcome } from '../types.js'
import type { CheckpointStore, StoredRunCheckpoint, StoredTaskKey } from './journal-store.js'

// The record-shaping helpers of the checkpoint journal (journal-checkpoints.ts).

/** Longest label or agent id stored (the store's id bound, in UTF-16 code units): a longer one is cut, not refused. */
export const MAX_LABEL = 255

/** What the store's task-key claim hashes: the service's key already covers model, persona and prompt. */
function taskKeyInput(run: Pick<JournalledRun, 'info' | 'reattachKey'>): StoredTaskKey {
  return { parent: run.info.parentId, provider: run.info.provider, agent: '', prompt: run.reattachKey! }
}

/** A provider's checkpoint may name how to reach its child again: an ACP session, an A2A task. */
export function reattachOf(checkpoint: unknown): Pick<StoredRunCheckpoint, 'sessionId' | 'taskId' | 'agentUrl'> {
  if (!checkpoint || typeof checkpoint !== 'object') return {}
  const fields: Pick<StoredRunCheckpoint, 'sessionId' | 'taskId' | 'agentUrl'> = {}
  const { sessionId, taskId, agentUrl } = checkpoint as Record<string, unknown>
  if (typeof sessionId === 'string' && sessionId && sessionId.length <= MAX_LABEL) fields.sessionId = sessionId
  if (typeof taskId === 'string' && taskId && taskId.length <= MAX_LABEL) fields.taskId = taskId
  if (typeof agentUrl === 'string' && agentUrl && agentUrl.length <= 2048) fields.agentUrl = agentUrl
  return fields
}

export function safeCheckpoint(run: JournalledRun): unknown {
  try {
    return run.checkpoint()
  } catch {
    return undefined
  }
}

/** Claims the run's task key in the store: a second claimer (another start, or an earlier run of this key) is logged. */
export async function claimKey(store: CheckpointStore, run: JournalledRun, log: Logger): Promise<void> {
  const claim = await store.tasks.claim(taskKeyInput(run), run.id)
  if (!claim.claimed && claim.runId !== run.id) {
    log.warn('run %s started under task key %s, which run %s holds in the checkpoint store', run.id, run.reattachKey, claim.runId)
  }
}

/** What a background task adds to its run's settle record. */
type TaskEntry = { readonly handle: string; readonly label: string; readonly delivery?: { readonly via: string } }

/** A run's settle record: its end, output (cut to the store's bound), usage and work; a background task's book entry. */
export function settleRecord(store: CheckpointStore, id: string, outcome: SubagentOutcome, task?: TaskEntry): StoredRunCheckpoint {
  const { stopReason } = outcome
  const record: StoredRunCheckpoint = {
    id,
    state: stopReason === 'closed' ? 'closed' : stopReason === 'interrupted' ? 'interrupted' : 'settled',
    stopReason,
    // A result longer than the store keeps is stored cut, not dropped.
    result: headBytes(outcome.output, store.limits.maxTextBytes),
    work: { ...outcome.work },
  }
  if (outcome.usage) record.usage = { ...outcome.usage }
  if (task) {
    record.background = true
    record.label = headChars(`${task.handle} ${task.label}`, MAX_LABEL)
    // As far as known now (a task's result is delivered once its record is written: rarely before).
    if (task.delivery) record.delivery = task.delivery.via
  }
  return record
}

/** Writes a record without reading it back (a store without `record` is written through `save`). */
export function put(store: CheckpointStore, record: StoredRunCheckpoint, created?: boolean): Promise<void> {
  // A new run's start record is lazy: its write is batched with the run's next one (checkpoints' group commit).
  // An end is logged: with a run log, the outcome waits for its local append, not for the database.
  if (store.record) return store.record(record, { created: !!created, lazy: !!created, logged: !created && ENDS.has(record.state!) })
  return store.save(record).then(ignore)
}

function ignore(): void {}

/** The states a settle writes. */
const ENDS = new Set<string>(['settled', 'closed', 'interrupted'])

/** What a new run's start record takes when the store writes it: the run's checkpoint as its transcript, and its reattach ids. */
export function deferredOf(run: JournalledRun): Pick<StoredRunCheckpoint, 'transcript' | 'sessionId' | 'taskId' | 'agentUrl'> {
  const checkpoint = safeCheckpoint(run)
  return { transcript: checkpoint, ...reattachOf(checkpoint) }
}

/** Saves `record` with `checkpoint` as its transcript; one too large to keep is dropped (logged), the rest is saved. */
export async function putWithTranscript(
  store: CheckpointStore, record: StoredRunCheckpoint, checkpoint: unknown, log: Logger, created?: boolean,
): Promise<void> {
  try {
    await put(store, { ...record, transcript: checkpoint }, created)
  } catch (error) {
    if (!tooLarge(error)) throw error
    dropped(log, record.id, error)
    await put(store, record, created)
  }
}

/**
 * A settle record (and the transcript a closed, interrupted or background run keeps) handed to the store now, in the
 * hook: in the store's run log before anything else runs, so a `ctx.stop()` in this tick still finds it. Undefined
 * when nothing is left to wait for; a promise when the store must write first (no run log, a transcript too large).
 */
export function settleNow(
  store: CheckpointStore, record: StoredRunCheckpoint, checkpoint: unknown, log: Logger,
): Promise<void> | undefined {
  if (checkpoint === undefined) return store.recordNow!(record, LOGGED)
  const written = store.recordNow!({ ...record, transcript: checkpoint }, LOGGED)
  // A transcript over the store's bound is refused before anything is written: the record goes without it.
  return written?.catch((error: unknown) => {
    if (!tooLarge(error)) throw error
    dropped(log, record.id, error)
    return store.recordNow!(record, LOGGED)
  })
}

const LOGGED = Object.freeze({ logged: true })

function tooLarge(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === 'CHECKPOINT_TOO_LARGE'
}

function dropped(log: Logger, runId: string, error: unknown): void {
  log.warn('run %s: its checkpoint was not stored (%s); it cannot be restored after a restart', runId, describeError(error))
}

/** The stored states of a run that ended: nobody answers its question any more. */
const ENDED = new Set<string>(['settled', 'closed', 'interrupted'])

/** Cancels stored question `id` if it is still pending. */
export async function cancelPending(store: CheckpointStore, id: string): Promise<void> {
  if ((await store.questions.get(id))?.state === 'pending') await store.questions.cancel(id)
}

/**
 * At start (`ctx` injects the store): cancels the pending questions of this host's runs that ended. A run that settles as
 * the host stops is recorded in the hook (`settleNow`), but its question's cancel needs the database, which the stop
 * removes in the same pass: the next start cancels it here. Questions of parked and running runs, and of other hosts'
 * runs, stay. Logged, never thrown.
 */
export function cancelEndedQuestions(ctx: Context, log: Logger): void {
  const store = withoutCallerTracing(ctx.get('checkpoints' as never) as unknown as CheckpointStore)
  cancelEnded(store).then((cancelled) => {
    if (cancelled) log.info('cancelled %d stored question(s) of runs that ended as an earlier start stopped', cancelled)
  }, (error: unknown) => log.warn('could not cancel the stored questions of runs that ended: %s', describeError(error)))
}

async function cancelEnded(store: CheckpointStore): Promise<number> {
  const pending = await store.questions.pending()
  if (!pending.length) return 0
  const open = new Set((await store.list({ state: ['parked', 'running'], brief: true })).map((run) => run.id))
  let cancelled = 0
  for (const question of pending) {
    if (open.has(question.runId)) continue
    const run = await store.load(question.runId)
    if (!run || run.host !== store.host || !ENDED.has(run.state)) continue
    // Answered or cancelled meanwhile (QUESTION_NOT_PENDING): nothing left to do.
    if (await store.questions.cancel(question.id).then(() => true, () => false)) cancelled++
  }
  return cancelled
}
