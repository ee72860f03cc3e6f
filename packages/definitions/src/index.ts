// The face of @cordis-subagents/definitions: the registry service ctx.agentDefinitions. Its entries
// `./agents` (definitions in a config entry) and `./claude` (a directory of Claude Code agent files) fill it.
import { AgentDefinitions } from './registry.js'

export { AgentDefinitions }
export default AgentDefinitions
export { DefinitionError, type DefinitionErrorCode } from './errors.js'
export type { AgentDefinition, DefinitionInput, ToolUse } from './types.js'
export { checkDefinition, DEFAULT_PROVIDER, MAX_DOES_LENGTH, MAX_SOUL_BYTES } from './check.js'
