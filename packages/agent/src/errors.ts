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

import type { RunOptions } from './types.js'

export class AgentError extends CodedError<AgentErrorCode> {
  override name = 'AgentError'
}

/** Misuse of `Agent.run` fails at the call, with what to pass instead. */
export function checkRunArguments(prompt: unknown, options: RunOptions): void {
  if (typeof prompt !== 'string') throw new AgentError('INVALID_PROMPT', 'The prompt must be a string.')
  if (options === null || typeof options !== 'object') throw new AgentError('INVALID_OPTIONS', 'run() takes an options object { signal?, onEvent?, onSpend? }.')
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new AgentError('INVALID_OPTIONS', 'options.signal must be an AbortSignal (e.g. new AbortController().signal).')
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') {
    throw new AgentError('INVALID_OPTIONS', 'options.onEvent must be a function.')
  }
  if (options.onSpend !== undefined && typeof options.onSpend !== 'function') {
    throw new AgentError('INVALID_OPTIONS', 'options.onSpend must be a function.')
  }
}
