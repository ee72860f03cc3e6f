import { ToolRegistry } from './registry.js'

// The face of ctx.tools: the service, its views and result cap, and the tool contract's types.
// Usage, work counts and limits are shared vocabulary: import them from @cordis-subagents/shared.
export { ToolRegistry, type ToolReservation } from './registry.js'
export { capResult, DEFAULT_MAX_RESULT_BYTES, MIN_RESULT_BYTES, ToolView, type ToolViewOptions } from './view.js'
export { ToolError, type ToolErrorCode } from './errors.js'
export type {
  Tool, ToolCall, ToolCaller, ToolChange, ToolExecContext, ToolImage, ToolInputSchema, ToolResult, ToolSpec, ToolSuspension,
  ToolUpdate,
} from './types.js'

export default ToolRegistry
