import { CodedError } from '@cordis-subagents/shared'

export type McpErrorCode =
  /** The load's config is unusable (both or neither of `command`/`url`, a bad name, a bad URL). */
  | 'MCP_INVALID_CONFIG'
  /** Another client load of the app already uses this server `name` (its tools and `ctx.mcp` entry would clash). */
  | 'MCP_DUPLICATE_NAME'
  /** The server did not start, or did not answer `initialize` within `startupTimeout`. */
  | 'MCP_CONNECT_FAILED'
  /** The server went away (process exit, closed connection) while the load or a call needed it. */
  | 'MCP_SERVER_CLOSED'
  /** A call did not finish within `callTimeout` (the server got `notifications/cancelled`). */
  | 'MCP_TIMEOUT'
  /** The server answered a request with an error (JSON-RPC error, invalid result). */
  | 'MCP_CALL_FAILED'

/** An error with a stable code; the message says what to do. */
export class McpError extends CodedError<McpErrorCode> {
  override name = 'McpError'
}
