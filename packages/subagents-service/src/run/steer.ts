import { MAX_MESSAGE_LENGTH as MAX_SEND_LENGTH } from '@cordis-subagents/shared'
import { describeError } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type { SubagentRun } from '../types.js'


/**
 * A holder's follow-up message for a run (`SubagentHandle.send`): refused with a code when it is
 * malformed, the run is not live, or its provider cannot take one; else passed to the provider's run.
 */
export function sendFollowUp(
  run: SubagentRun | undefined, provider: string | undefined, runId: string, live: boolean, message: string,
): void {
  if (typeof message !== 'string' || !message.trim()) throw new SubagentError('INVALID_REQUEST', 'send() takes a non-empty message string.')
  if (message.length > MAX_SEND_LENGTH) {
    throw new SubagentError('INVALID_REQUEST', `A follow-up message is at most ${MAX_SEND_LENGTH} characters (got ${message.length}); shorten it.`)
  }
  if (!live || !run) throw new SubagentError('NOT_RUNNING', `Run ${runId} has ended; collect its result, then delegate again to continue.`)
  if (typeof run.send !== 'function') {
    throw new SubagentError('STEER_UNSUPPORTED', `Provider "${provider}" cannot take follow-up messages; wait for the result, then delegate again.`)
  }
  try {
    run.send(message)
  } catch (error) {
    if (error instanceof SubagentError) throw error
    throw new SubagentError('NOT_RUNNING', `Provider "${provider}" refused the message: ${describeError(error)}`, { cause: error })
  }
}
