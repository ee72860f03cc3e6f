import { CodedError } from '@cordis-subagents/shared'

/** Stable codes of the errors `ctx.checkpoints` throws. */
export type CheckpointErrorCode =
  /** The plugin config is unusable (a bound out of range, an empty host name). Thrown at load. */
  | 'CHECKPOINTS_INVALID_CONFIG'
  /** A record's transcript, result or question is longer than its configured bound (bytes of UTF-8 JSON / text). */
  | 'CHECKPOINT_TOO_LARGE'
  /** The store holds `maxRuns` runs (or `maxPendingQuestions` questions) and a retention sweep freed none. */
  | 'CHECKPOINT_LIMIT'
  /** A record is malformed: an id too long or empty, an unknown state, a value that is not JSON; or a stored row is damaged. */
  | 'CHECKPOINT_INVALID'
  /** The run log's path is not a regular file this store can read (a FIFO, device, symbolic link, directory) or is far past its bound. */
  | 'CHECKPOINT_RUN_LOG'
  /** No run or question with that id (or it was swept). */
  | 'CHECKPOINT_NOT_FOUND'
  /** The question was already answered or cancelled. */
  | 'QUESTION_NOT_PENDING'
  /** A save would move a settled run to another state: a settled run never starts again. */
  | 'RUN_SETTLED'

export class CheckpointError extends CodedError<CheckpointErrorCode> {
  override name = 'CheckpointError'
}

export function runNotFound(id: string): CheckpointError {
  return new CheckpointError('CHECKPOINT_NOT_FOUND', `no run ${id} (it may have been swept).`)
}

/** Why a write could not move run `id` (`run`: what is stored now): it settled, or it does not exist. */
export function notMoved(id: string, run: { stopReason?: string } | undefined, what: string): CheckpointError {
  if (!run) return runNotFound(id)
  return new CheckpointError('RUN_SETTLED', `run ${id} settled (${run.stopReason ?? 'settled'}) and cannot be ${what}: `
    + 'a settled run never starts again; read its result with load().')
}
