import { ToolRegistry } from './registry.js'

export * from './types.js'
export * from './errors.js'
export * from './usage.js'
export * from './limits.js'
export { ToolRegistry, TOOL_NAME_PATTERN, type ToolReservation } from './registry.js'
export { ToolView } from './view.js'
export { describeError } from '@cordis-subagents/shared'
export { withoutCallerTracing } from './caller-tracing.js'

export default ToolRegistry
