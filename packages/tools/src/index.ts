import { ToolRegistry } from './registry.js'

export * from './types.js'
export * from './errors.js'
export * from './usage.js'
export * from './limits.js'
export { ToolRegistry, TOOL_NAME_PATTERN, type ToolReservation } from './registry.js'
export { ToolView, type ToolViewOptions } from './view.js'
export { capResult, DEFAULT_MAX_RESULT_BYTES, MIN_RESULT_BYTES } from './result-cap.js'
export { describeError } from '@cordis-subagents/shared'
export { withoutCallerTracing } from './caller-tracing.js'

export default ToolRegistry
