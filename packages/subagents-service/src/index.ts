import { SubagentService } from './service.js'

export { SubagentService }
export default SubagentService
export * from './types.js'
export * from './errors.js'
export type { SubagentEventMap, SubagentStartFailure } from './events.js'
export { STOP_REASONS } from './outcome.js'
export { MAX_DIAGNOSTIC_BYTES, TRUNCATION_MARK, capDiagnostic, describeError } from './diagnostic.js'
export { PROVIDER_NAME_PATTERN } from './validate.js'
export { MAX_ALLOWED_TOOLS, PASSED_LIMITS, treeCrossing, type TreeCrossing } from './crossing.js'
export { Config, DEFAULTS } from './config.js'
export { type ProviderRunParts, type ProviderRunTools, startProviderRun } from './provider-run.js'
export {
  BackgroundRegistry, type BackgroundJob, type BackgroundLimits, type BackgroundResult, type BackgroundStart, type BackgroundState,
  BackgroundTask, type Delivery, MAX_ENDED_PER_PARENT, MAX_LIVE_PER_PARENT, ParentBackground, resultHeader,
  type TurnEndPolicy, type WaitReport,
} from './background.js'
