import { CodedError } from '@cordis-subagents/shared'

/** Stable codes of this plugin (see the README's Errors table). */
export type ChatErrorCode =
  | 'RUN_LIMIT'
  | 'NOT_FOUND'
  | 'NOT_ALLOWED'
  | 'ALREADY_ANSWERED'
  | 'INVALID_ANSWER'
  | 'NOT_RUNNING'
  | 'NO_CHANNEL'

/** An error of `@cordis-subagents/koishi-chat`; its message is what the chat is told. */
export class ChatError extends CodedError<ChatErrorCode> {
  override name = 'ChatError'
}
