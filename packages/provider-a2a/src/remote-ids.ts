import type { RunRecord } from '@cordis-subagents/subagents-service'
import { A2aError } from './errors.js'

/**
 * Longest id this provider takes from a remote for its task or for the task's context, in characters
 * (UTF-16 code units, as JavaScript counts a string's length). A2A ids are opaque strings, UUIDs (36)
 * in practice. The run keeps both, stores them in its checkpoint and sends them back (the task id on
 * every poll, answer and cancel; the context id with every answer and follow-up). A longer one is
 * refused where it first comes (the send's answer, a stream event, a `GetTask` answer) and where a
 * journal gives it back (`restore`), never cut: a cut id names another task or context, or none.
 */
const MAX_REMOTE_ID_CHARS = 256

/** What a remote id names. */
export type RemoteIdKind = 'task' | 'context'

/**
 * A remote named its task, or the task's context, with an id longer than `MAX_REMOTE_ID_CHARS`: the run
 * does not take it. For a context, what became of the task is the caller's to say (a start leaves it, a run cancels it).
 */
export class RemoteIdTooLongError extends Error {
  /** `taskId`: for a context, the task it came with (within the bound, so it may be named). */
  constructor(readonly kind: RemoteIdKind, readonly length: number, readonly taskId?: string) {
    super(kind === 'task'
      ? `it named its task with an id of ${length} characters, longer than the ${MAX_REMOTE_ID_CHARS} this provider takes `
        + '(a cut id would name another task), so the run does not follow, answer or cancel that task '
        + `(it may still run there). Have the remote agent use task ids of at most ${MAX_REMOTE_ID_CHARS} characters`
      : `it named the context of ${taskId ? `task ${taskId}` : 'its task'} with an id of ${length} characters, longer than `
        + `the ${MAX_REMOTE_ID_CHARS} this provider takes (a cut id would name another context), so the run does not keep, `
        + `store or send back that context. Have the remote agent use context ids of at most ${MAX_REMOTE_ID_CHARS} characters`)
    this.name = 'RemoteIdTooLongError'
  }
}

/** `id`, when it is within `MAX_REMOTE_ID_CHARS`; else throws `RemoteIdTooLongError` (for a context, naming `taskId`). */
export function checkedRemoteId(kind: RemoteIdKind, id: string, taskId?: string): string {
  if (id.length > MAX_REMOTE_ID_CHARS) throw new RemoteIdTooLongError(kind, id.length, taskId)
  return id
}

/**
 * The task id a journal recorded for a run (`checkpoint.taskId`), after checking the record's ids.
 * Rejects `A2A_RESTORE_FAILED` when there is no task id, or when it or the recorded context id
 * (`checkpoint.contextId`, when there is one) is longer than `MAX_REMOTE_ID_CHARS`: this provider takes
 * no such id from a remote, so the record is damaged (or not ours), and nothing is sent for it (a cut
 * id names another task or context). The restored run takes its context from the `GetTask` answer.
 */
export function storedTaskId(record: RunRecord): string {
  const saved = record.checkpoint as { taskId?: unknown; contextId?: unknown } | undefined
  const taskId = saved?.taskId
  if (typeof taskId !== 'string' || !taskId) {
    const why = `The record of run ${record.runId} names no remote task (checkpoint.taskId); it cannot be reattached.`
    throw new A2aError('A2A_RESTORE_FAILED', why)
  }
  const contextId = typeof saved?.contextId === 'string' ? saved.contextId : ''
  for (const [field, id, what] of [['taskId', taskId, 'task'], ['contextId', contextId, 'context']] as const) {
    if (id.length <= MAX_REMOTE_ID_CHARS) continue
    throw new A2aError('A2A_RESTORE_FAILED', `The record of run ${record.runId} names a remote ${what} id of ${id.length} characters `
      + `(checkpoint.${field}), longer than the ${MAX_REMOTE_ID_CHARS} this provider takes from a remote: the record is damaged `
      + `or not one this provider wrote (versions before the bound took longer ids), and a cut id would name another ${what}. `
      + 'Nothing was sent to the remote agent; the run cannot be reattached. Delegate the task again, and check what wrote the journal.')
  }
  return taskId
}
