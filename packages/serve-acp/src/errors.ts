import { CodedError } from '@cordis-subagents/shared'

/** Codes of the errors this package throws at load, and of the `data.code` of the JSON-RPC errors it answers with. */
export type ServeAcpErrorCode =
  | 'INVALID_CONFIG'
  | 'STDIO_TAKEN'
  | 'DEPTH_EXCEEDED'
  | 'TOO_MANY_SESSIONS'
  /** A request past `maxRequestsInFlight` requests of the client being handled at once. */
  | 'TOO_MANY_REQUESTS'
  | 'TURN_RUNNING'
  | 'UNKNOWN_SESSION'
  | 'INVALID_CWD'
  | 'PROMPT_TOO_LARGE'
  | 'LOAD_UNSUPPORTED'
  | 'SESSION_NOT_STORED'
  | 'TURN_FAILED'
  /** A prompt to a session parked on a question that the agent does not take as the answer. */
  | 'INVALID_ANSWER'
  /** A prompt to a session whose parent's tool ceiling leaves none of the served tools. */
  | 'NO_TOOLS_LEFT'
  /** A session/list cursor this server did not give. */
  | 'INVALID_CURSOR'
  /** A client's `mcpServers` that this server's policy (`mcpServers` config) does not start. */
  | 'MCP_SERVER_REFUSED'

export class ServeAcpError extends CodedError<ServeAcpErrorCode> {
  override name = 'ServeAcpError'
}
