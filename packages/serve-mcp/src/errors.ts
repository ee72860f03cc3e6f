import { CodedError } from '@cordis-subagents/shared'

export type ServeMcpErrorCode =
  /** The serving plugin's config is unusable (`tools` is empty, a non-loopback host without allowRemote, a malformed token). */
  | 'MCP_SERVE_INVALID_CONFIG'
  /** A second live load of the serving plugin in one app (and one isolation realm). */
  | 'MCP_SERVE_DUPLICATE_LOAD'

/** An error with a stable code; the message says what to do. */
export class ServeMcpError extends CodedError<ServeMcpErrorCode> {
  override name = 'ServeMcpError'
}
