import { CodedError } from '@cordis-subagents/shared'

export type ServeMcpErrorCode =
  /** The serving plugin's config is unusable (`tools` is empty). */
  | 'MCP_SERVE_INVALID_CONFIG'

/** An error with a stable code; the message says what to do. */
export class ServeMcpError extends CodedError<ServeMcpErrorCode> {
  override name = 'ServeMcpError'
}
