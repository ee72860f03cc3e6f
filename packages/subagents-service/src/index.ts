import { SubagentService } from './service.js'

// The face of ctx.subagents. The provider author kit (contract suite, fakes) is `./testing`.
export { SubagentService }
export default SubagentService
export { Config, DEFAULTS } from './config.js'
export type {
  ProviderCapabilities, ProviderStartRequest, SubagentHandle, SubagentOutcome, SubagentProvider, SubagentRequest, SubagentResult,
  SubagentRun, SubagentRunInfo, SubagentRunState, SubagentStart, SubagentStopReason, SubagentUpdate, TraceContext,
  TraceContextSource,
} from './types.js'
export { type JournalledRun, NO_JOURNAL, type RunJournal, type RunRecord } from './journal.js'
export { type HoldOptions, MAX_PARKED_PER_PARENT, ParkedBook } from './parked-book.js'
export { type KeptResult, MAX_KEPT_RESULT_BYTES, MAX_KEPT_RESULTS, ResultBook, type ResultLimits } from './results.js'
export { MAX_TASK_KEYS_PER_PARENT } from './task-keys.js'
export type { ParkedRunInfo } from './host-verbs.js'
export { type SubagentCapability, SubagentError, type SubagentErrorCode, type SubagentErrorOptions } from './errors.js'
export type { SubagentEventHandlers, SubagentEventMap, SubagentStartFailure } from './events.js'
export { isIdleStop, STOP_REASONS } from './outcome.js'
export { capDiagnostic, MAX_DIAGNOSTIC_BYTES, TRUNCATION_MARK } from './diagnostic.js'
export { PASSED_LIMITS, treeCrossing, type TreeCrossing } from './crossing.js'
export {
  BackgroundRegistry, type BackgroundLimits, type BackgroundResult, type BackgroundStart, type BackgroundState, BackgroundTask,
  type Delivery, MAX_ENDED_PER_PARENT, MAX_LIVE_PER_PARENT, ParentBackground, resultHeader, type TurnEndPolicy, type WaitReport,
} from './background.js'
export {
  CONTINUE_WINDOW_MS, type ContinuableRunInfo, ContinuableRuns, type ContinueOptions, MAX_CONTINUABLE_RUNS, MAX_CONTINUES_PER_RUN,
} from './continuation.js'
