import type { RunRecord } from '@cordis-subagents/subagents-service'
import { A2aError } from './errors.js'

/**
 * Longest remote task id this provider takes, in characters (UTF-16 code units, as JavaScript counts
 * a string's length). A2A task ids are opaque strings, UUIDs (36) in practice. A longer one is refused
 * where it first comes (the send's answer, the first stream event, a `GetTask` answer) and where a
 * journal gives it back (`restore`), never cut: a cut id names another task, or none.
 */
export const MAX_TASK_ID_CHARS = 256

/** A remote named its task with an id longer than `MAX_TASK_ID_CHARS`: the run does not take it. */
export class TaskIdTooLongError extends Error {
  constructor(readonly length: number) {
    super(`it named its task with an id of ${length} characters, longer than the ${MAX_TASK_ID_CHARS} this provider takes `
      + '(a cut id would name another task), so the run does not follow, answer or cancel that task '
      + `(it may still run there). Have the remote agent use task ids of at most ${MAX_TASK_ID_CHARS} characters`)
    this.name = 'TaskIdTooLongError'
  }
}

/** `id`, when it is within `MAX_TASK_ID_CHARS`; else throws `TaskIdTooLongError`. */
export function checkedTaskId(id: string): string {
  if (id.length > MAX_TASK_ID_CHARS) throw new TaskIdTooLongError(id.length)
  return id
}

/**
 * The task id a journal recorded for a run (`checkpoint.taskId`). Rejects `A2A_RESTORE_FAILED` when
 * there is none, or when it is longer than `MAX_TASK_ID_CHARS`: this provider takes no such id from
 * a remote, so the record is damaged (or not ours), and nothing is sent for it (a cut id names another task).
 */
export function storedTaskId(record: RunRecord): string {
  const taskId = (record.checkpoint as { taskId?: unknown } | undefined)?.taskId
  if (typeof taskId !== 'string' || !taskId) {
    const why = `The record of run ${record.runId} names no remote task (checkpoint.taskId); it cannot be reattached.`
    throw new A2aError('A2A_RESTORE_FAILED', why)
  }
  if (taskId.length > MAX_TASK_ID_CHARS) {
    throw new A2aError('A2A_RESTORE_FAILED', `The record of run ${record.runId} names a remote task id of ${taskId.length} characters `
      + `(checkpoint.taskId), longer than the ${MAX_TASK_ID_CHARS} this provider takes from a remote: the record is damaged `
      + 'or not one this provider wrote (versions before the bound took longer ids), and a cut id would name another task. '
      + 'Nothing was sent to the remote agent; the run cannot be reattached. Delegate the task again, and check what wrote the journal.')
  }
  return taskId
}
