import { CodedError } from '@cordis-subagents/shared'

/** Stable codes of the errors this package throws (at load, or from `start`). */
export type A2aErrorCode =
  /** The plugin config is unusable (a bad URL, http:// to a non-loopback host without `allowHttp`). Thrown at load. */
  | 'A2A_INVALID_CONFIG'
  /** The agent card could not be fetched: connection refused, a non-200 status, a timeout. */
  | 'A2A_CARD_UNREACHABLE'
  /** The agent card was fetched but cannot be used: not JSON, wrong content type, too large, missing fields, no interface we speak. */
  | 'A2A_CARD_INVALID'
  /**
   * `cardKey` / `cardJwksUrl` is set and the agent card is unsigned, does not verify (changed after
   * signing, another key), or the JWKS could not be read.
   */
  | 'A2A_CARD_UNVERIFIED'
  /** The remote did not accept the task: the send failed, timed out or was answered with an error. */
  | 'A2A_SEND_FAILED'
  /** `restore`: the record names no task, or the remote could not be asked about it (not found, unreachable). */
  | 'A2A_RESTORE_FAILED'
  /** The request's signal aborted before the remote accepted the task (or sent its first stream event), or the plugin stopped. */
  | 'ABORTED'

export class A2aError extends CodedError<A2aErrorCode> {
  override name = 'A2aError'
}
