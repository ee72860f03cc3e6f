import { CodedError } from '@cordis-subagents/shared'

export type ChatLunaBridgeErrorCode =
  /** A model ref `chatluna` without `:<platform>/<model>`, and no `defaultModel` configured. */
  | 'CHATLUNA_NO_MODEL'
  /** The named model is not one ChatLuna has (no adapter serves that platform, or it lists no such model). */
  | 'CHATLUNA_UNKNOWN_MODEL'

/** An error with a stable code; the message says what to do. */
export class ChatLunaBridgeError extends CodedError<ChatLunaBridgeErrorCode> {
  override name = 'ChatLunaBridgeError'
}
