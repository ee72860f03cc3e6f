import { CodedError } from '@cordis-subagents/shared'

export type ToolErrorCode = 'DUPLICATE_TOOL' | 'INVALID_TOOL' | 'INVALID_FILTER' | 'INVALID_CONFIG'

export class ToolError extends CodedError<ToolErrorCode> {
  override name = 'ToolError'
}
