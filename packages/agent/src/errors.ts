export type AgentErrorCode =
  | 'BUSY'
  | 'DISPOSED'
  | 'INVALID_PROMPT'
  | 'INVALID_OPTIONS'
  | 'INVALID_MODEL'
  | 'DUPLICATE_MODEL'

export class AgentError extends Error {
  override name = 'AgentError'
  constructor(readonly code: AgentErrorCode, message: string) {
    super(message)
  }
}
