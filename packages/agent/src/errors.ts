import { CodedError } from '@cordis-subagents/shared'

export type AgentErrorCode =
  | 'BUSY'
  | 'DISPOSED'
  | 'INVALID_PROMPT'
  | 'INVALID_OPTIONS'
  | 'INVALID_MODEL'
  | 'DUPLICATE_MODEL'
  | 'INBOX_FULL'
  | 'MODEL_GATE_FULL'
  | 'PARKED'
  | 'NOT_PARKED'
  | 'ALREADY_ANSWERED'
  | 'EMPTY_INBOX'
  | 'HOOK_FAILED'
  | 'DUPLICATE_HOOKS'
  | 'INVALID_OUTPUT_SCHEMA'

export class AgentError extends CodedError<AgentErrorCode> {
  override name = 'AgentError'
}
