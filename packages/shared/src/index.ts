export { choice, count, countProblem, duration, durationProblem, MAX_TIMER_MS } from './numbers.js'
export { capBytes, describeError, headBytes, utf8Length } from './text.js'
export { isName, NAME_PATTERN, NAME_RULE } from './names.js'
export { type ToolFilter, toolFilterProblem } from './tool-filter.js'
export { type Capabilities, type CapabilityOptions, missingCapability, type MissingCapability } from './capabilities.js'
export { emitIsolated, emitIsolatedOn, hasListenersOn } from './isolated-emit.js'
export { isPeerControl, peerLine, peerText, type PeerTextOptions, stripControl } from './peer-text.js'
export { capForRedaction, MAX_REDACT_CHARS, redact, REDACTED, Redactor, type RedactorOptions } from './redact.js'
export { type Deferred, deferred } from './deferred.js'
export { abortWaiters, onAbort } from './abort-fanout.js'
export { DeadlineQueue } from './deadlines.js'
export {
  checkedTraceContext, isTracestate, MAX_TRACESTATE_LENGTH, parseTraceparent, traceContextFrom, traceContextProblem,
  type TraceContextHeaders, type TraceParent,
} from './trace-context.js'
export {
  type Crossing, type CrossingBudget, type CrossingBudgetKey, CROSSING_BUDGET_KEYS, CROSSING_ENV, CROSSING_ENV_PREFIX, CROSSING_KEY,
  crossingEnv, crossingForFrom, crossingForMeta, crossingFromEnv, crossingFromMeta, crossingMeta, crossingTrace, crossingValue,
  depthRefusal, MAX_ALLOWED_TOOLS, type ScopedCeiling, strictestCrossing,
} from './crossing/crossing.js'
export { laterSpend, type SpendReport, spendFromMeta, spendValue } from './crossing/spend.js'
export {
  lowestLimits, type ServedBounds, type ServedBudget, type ServedLimits, servedLimits, type ServingHost,
} from './crossing/served-limits.js'
export { SpendReporter, type SpentCounts } from './crossing/spend-reporter.js'
export { type CrossingSource, treeCrossing, type TreeCrossing } from './crossing/tree.js'
export { lazily } from './lazy.js'
export { defaultHosts, hostForUrl, hostHeader, isLoopback, originsOf, sameSecret, urlHost } from './host-guards.js'
export {
  CORE_ENV, DEFAULT_EXCLUDE, EnvMatcher, type EnvInherit, envProblem, type EnvPolicy, excludedValues, NOT_SECRET_NAMES, policyEnv,
} from './env-policy.js'
export {
  addWork, type BudgetBreach, type BudgetName, describeBreach, emptyWork, type LimitCode, LimitError, limitStop, type WorkCounts,
} from './limits.js'
export {
  addCounts, addUsage, checkedUsage, checkedWork, countOf, emptyUsage, isCount, MAX_REPORTED_COUNT, reportedCount, totalTokens, type Usage,
} from './usage.js'
export { MAX_MESSAGE_LENGTH } from './messages.js'
export { withoutCallerTracing } from './caller-tracing.js'
export {
  MAX_ANSWER_LENGTH, MAX_QUESTION_LENGTH, MAX_QUESTION_PATH, newQuestionId, type PendingQuestion, type QuestionKind,
} from './questions.js'
export { answerProblem, checkedQuestion, questionVia } from './question-check.js'
export { foreignQuestion, QUESTION_KEY, questionFromMeta, questionMeta } from './crossing/question.js'
