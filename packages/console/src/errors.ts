import { CodedError } from '@cordis-subagents/shared'

/** Stable codes of every load failure and refusal (README: Errors). */
export type ConsoleCode =
  | 'INVALID_CONFIG'
  | 'LISTEN_FAILED'
  | 'DUPLICATE_LOAD'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN_HOST'
  | 'FORBIDDEN_ORIGIN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'BODY_TOO_LARGE'
  | 'INVALID_REQUEST'
  | 'TOO_MANY_VIEWERS'
  | 'NOT_RUNNING'
  | 'NOT_CANCELLABLE'
  | 'NOT_STEERABLE'
  | 'NOT_PARKED'
  | 'ALREADY_ANSWERED'

export class ConsoleError extends CodedError<ConsoleCode> {
  override name = 'ConsoleError'
}

/** The HTTP status of each refusal. */
export const STATUS: Record<Exclude<ConsoleCode, 'INVALID_CONFIG' | 'LISTEN_FAILED' | 'DUPLICATE_LOAD'>, number> = {
  UNAUTHENTICATED: 401,
  FORBIDDEN_HOST: 403,
  FORBIDDEN_ORIGIN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  BODY_TOO_LARGE: 413,
  INVALID_REQUEST: 400,
  TOO_MANY_VIEWERS: 429,
  NOT_RUNNING: 409,
  NOT_CANCELLABLE: 409,
  NOT_STEERABLE: 409,
  NOT_PARKED: 409,
  ALREADY_ANSWERED: 409,
}
