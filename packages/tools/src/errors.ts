export type ToolErrorCode = 'DUPLICATE_TOOL' | 'INVALID_TOOL' | 'INVALID_FILTER' | 'INVALID_CONFIG'

export class ToolError extends Error {
  override name = 'ToolError'
  constructor(readonly code: ToolErrorCode, message: string) {
    super(message)
  }
}
