export { choice, count, countProblem, duration, durationProblem, MAX_TIMER_MS } from './vocabulary/numbers.js'
export { unsetGroup } from './vocabulary/unset.js'
export { capBytes, describeError, headBytes, headChars, utf8Length } from './vocabulary/text.js'
export { isName, NAME_PATTERN, NAME_RULE } from './vocabulary/names.js'
export { CodedError } from './vocabulary/errors.js'
export { isObject, isRecord, nestingDepth } from './vocabulary/records.js'
export { KeptWith } from './vocabulary/kept-with.js'
export { type ToolFilter, toolFilterProblem } from './vocabulary/tool-filter.js'
export { type Capabilities, type CapabilityOptions, missingCapability, type MissingCapability } from './vocabulary/capabilities.js'
export { emitIsolated, emitIsolatedOn, handleRejection, hasListenersOn } from './async/isolated-emit.js'
export { isPeerControl, peerLine, peerText, type PeerTextOptions, quotedLines, stripControl } from './security/peer-text.js'
export { capForRedaction, MAX_REDACT_CHARS, redact, REDACTED, Redactor, type RedactorOptions } from './security/redact.js'
export { type Deferred, deferred } from './async/deferred.js'
export { abortWaiters, onAbort } from './async/abort-fanout.js'
export { type AbortScope, AbortWaiters, isAbortScope, LazyAbort, listenForAbort, withScopeSignal } from './async/abort-scope.js'
export { DeadlineQueue } from './async/deadlines.js'
export {
  checkedTraceContext, isTracestate, MAX_TRACESTATE_LENGTH, parseTraceparent, traceContextFrom, traceContextProblem,
  type TraceContextHeaders, type TraceParent,
} from './crossing/trace-context.js'
export {
  type Crossing, type CrossingBudget, type CrossingBudgetKey, CROSSING_BUDGET_KEYS, CROSSING_ENV, CROSSING_KEY,
  crossingEnv, crossingForFrom, crossingForMeta, crossingFromEnv, crossingFromMeta, crossingMeta, crossingTrace, crossingValue,
  depthRefusal, MAX_ALLOWED_TOOLS, type ScopedCeiling, strictestCrossing,
} from './crossing/crossing.js'
export { laterSpend, MAX_TOOLS_PER_UPDATE, type SpendReport, spendFromMeta, spendValue } from './crossing/spend.js'
export {
  lowestLimits, type ServedBounds, type ServedBudget, type ServedLimits, servedLimits, type ServingHost,
} from './crossing/served-limits.js'
export { SpendReporter, type SpentCounts } from './crossing/spend-reporter.js'
export { ChildWarnings, EXPORT_FAILED, RELAYED_CODES } from './crossing/child-warnings.js'
export { type CrossingSource, treeCrossing, type TreeCrossing } from './crossing/tree.js'
export { aidsFrom, aidsOf, type CrossingAids, TELL_BOUNDS, TELL_METHOD, type TellBounds } from './crossing/aids.js'
export { remoteHandle, type TellRefusal, type TellRefusalCode, toldData, toldFrom, ToldRelay } from './crossing/told.js'
export { lazily } from './async/lazy.js'
export { listenInTurn } from './async/listen-turns.js'
export { type AppSlot, duplicateLoadMessage, takeAppSlot, takeServiceSlot } from './async/service-slots.js'
export { ExitHolds } from './async/exit-holds.js'
export { killWithHost } from './async/host-gone.js'
export { unawaitedStops } from './async/app-stop.js'
export {
  bearerToken, bindRefusal, type BindRequest, defaultHosts, hostForUrl, hostHeader, isLoopback, isTokenShape, originsOf, sameSecret,
  urlHost,
} from './security/host-guards.js'
export { isCredentialName } from './security/credential-shapes.js'
export { signalStrays, strayAlive, type Strays, straysOutsideGroup } from './security/strays.js'
export { type BodyBounds, boundedBody } from './security/bounded-body.js'
export {
  CORE_ENV, CROSSING_ENV_PREFIX, DEFAULT_EXCLUDE, EnvMatcher, type EnvInherit, envProblem, type EnvPolicy, excludedValues,
  NOT_SECRET_NAMES, policyEnv,
} from './security/env-policy.js'
export { LogBudget, type LogBudgetOptions, type LogLine } from './security/log-budget.js'
export {
  routeSdkConsole, type SdkConsoleCall, type SdkConsoleMethod, type SdkConsoleRoute, type SdkConsoleSink,
} from './security/sdk-console.js'
export { type BudgetBreach, type BudgetName, describeBreach, type LimitCode, LimitError, limitStop } from './vocabulary/limits.js'
export {
  addCounts, addUsage, addWork, checkedUsage, checkedWork, countOf, emptyUsage, emptyWork, isCount, MAX_REPORTED_COUNT, reportedCount,
  totalTokens, type Usage, type WorkCounts,
} from './vocabulary/usage.js'
export { MAX_MESSAGE_LENGTH } from './vocabulary/messages.js'
export { configuredDirectory, type ConfiguredDirectory } from './vocabulary/directories.js'
export { configFileProblem } from './vocabulary/config-file.js'
export { injected, withoutCallerTracing } from './async/caller-tracing.js'
export {
  expiringQuestion, MAX_ANSWER_LENGTH, MAX_QUESTION_LENGTH, MAX_QUESTION_PATH, newQuestionId, type PendingQuestion, type QuestionKind,
} from './vocabulary/questions.js'
export { answerProblem, checkedQuestion, questionVia } from './vocabulary/question-check.js'
export { foreignQuestion, QUESTION_KEY, questionFromMeta, questionMeta } from './crossing/question.js'
