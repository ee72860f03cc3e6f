import { CodedError } from '@cordis-subagents/shared'

/** Stable codes of the errors this package throws. */
export type AcpErrorCode =
  /** The plugin config is unusable (e.g. `cwd` does not exist). Thrown at load. */
  | 'ACP_INVALID_CONFIG'
  /** The agent process could not be started (command not found, working directory missing). */
  | 'ACP_SPAWN_FAILED'
  /** The agent exited or failed during `initialize` / `session/new`. */
  | 'ACP_STARTUP_FAILED'
  /** The handshake did not finish within `startupTimeout`. */
  | 'ACP_STARTUP_TIMEOUT'
  /** The agent speaks a protocol version other than 1. */
  | 'ACP_PROTOCOL_VERSION'
  /** The agent needs authentication before it opens a session. */
  | 'ACP_AUTH_REQUIRED'
  /** The agent stopped reading its stdin: more than the input backlog bound waited for it (a result's diagnostic after the hand-over). */
  | 'ACP_INPUT_BACKLOG'
  /** The agent sent more than `maxStreamBytes` of ACP data in one run (a result's diagnostic after the hand-over). */
  | 'ACP_STREAM_LIMIT'
  /** The request's signal aborted before the session was open. */
  | 'ABORTED'
  /** `restore` (after a restart) cannot continue the run: no usable checkpoint, or the agent cannot load its session. */
  | 'ACP_RESTORE_FAILED'

export class AcpError extends CodedError<AcpErrorCode> {
  override name = 'AcpError'
}
