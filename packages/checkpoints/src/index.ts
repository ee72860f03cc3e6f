import { Checkpoints } from './checkpoints.js'

export { Checkpoints }
export default Checkpoints
export type { RunTransition } from './checkpoints.js'
export type { RunFilter } from './run-filter.js'
export type { DeferredFields, RecordOptions } from './record-ops.js'
export { Config, type Limits } from './config.js'
export { CheckpointError, type CheckpointErrorCode } from './errors.js'
export type { Ask } from './questions.js'
export { Questions } from './questions.js'
export {
  ENDED_STATES, type QuestionRecord, type QuestionState, type Reattach, RUN_STATES, type RunCheckpoint, type RunState, type StoredRun,
  TABLES, type TaskKeyRecord,
} from './records.js'
export type { SweepReport } from './retention.js'
export { type Claim, type TaskKeyInput, taskKey, TaskKeys } from './task-keys.js'
