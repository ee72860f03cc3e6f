import { SubagentService } from './service.js'

// The face of ctx.subagents. The provider author kit (contract suite, fakes) is `./testing`.
export { SubagentService }
export default SubagentService
export { Config, DEFAULTS } from './config.js'
export type { ChildAgentOptions } from './child-options.js'
export { MAX_ACCOUNT_LISTED } from './verbs/results.js'
export type {
  ProviderCapabilities, ProviderStartRequest, SubagentHandle, SubagentOutcome, SubagentProvider, SubagentRequest, SubagentResult,
  SubagentRun, SubagentRunInfo, SubagentRunState, SubagentStart, SubagentStopReason, SubagentUpdate, TraceContext,
  TraceContextSource, RunRecord, BeginOptions, IncompleteLimit, SubagentStatus, SubagentStatusOf,
} from './types.js'
export { type JournalledRun, NO_JOURNAL, type RunJournal } from './run/journal-port.js'
export { type HoldOptions, MAX_PARKED_PER_PARENT, ParkedBook } from './parked-book.js'
export { type KeptResult, MAX_KEPT_RESULT_BYTES, MAX_KEPT_RESULTS, type ResultLimits } from './verbs/results.js'
export { ResultBook } from './after-run.js'
export { MAX_TASK_KEYS_PER_PARENT, reattachKey } from './run/reattach-keys.js'
export type { ParkedRunInfo } from './run/journal-port.js'
export type { ProviderFollower } from './provider-waiters.js'
export { type SubagentCapability, SubagentError, type SubagentErrorCode, type SubagentErrorOptions } from './errors.js'
export type { SubagentEventHandlers, SubagentEventMap, SubagentStartFailure } from './events.js'
export { isIdleStop, STOP_REASONS } from './run/limit-stops.js'
export { capDiagnostic, MAX_DIAGNOSTIC_BYTES, TRUNCATION_MARK } from './diagnostic.js'
export {
  BackgroundRegistry, type BackgroundLimits, BackgroundTask, MAX_ENDED_PER_PARENT, MAX_LIVE_PER_PARENT, ParentBackground, type WaitReport,
} from './background/book.js'
export type { BackgroundMessage, BackgroundStart, BackgroundState, Delivery, TurnEndPolicy } from './background/shapes.js'
export { ContinuableRuns, type ContinueOptions, MAX_CONTINUES_PER_RUN } from './verbs/continuation.js'
export { CONTINUE_WINDOW_MS, type ContinuableRunInfo, MAX_CONTINUABLE_RUNS } from './verbs/results.js'
export { statusOf } from './run/delegation.js'
export { STATUSES } from './run/limit-stops.js'
