import { TaskState } from '@a2a-js/sdk'
import { headChars, peerLine } from '@cordis-subagents/shared'
import type { SubagentStopReason } from '@cordis-subagents/subagents-service'

/** Most characters of the final status's text quoted in a diagnostic. */
const MAX_SAID_CHARS = 2_000

/**
 * Task states that end the run: terminal ones, and a state this protocol version does not know
 * (UNRECOGNIZED: following it could never end). Interrupted states park it instead (`isInterrupted`).
 */
export function isFinal(state: TaskState): boolean {
  return state === TaskState.UNRECOGNIZED || state === TaskState.TASK_STATE_COMPLETED || state === TaskState.TASK_STATE_FAILED
    || state === TaskState.TASK_STATE_CANCELED || state === TaskState.TASK_STATE_REJECTED
}

/** States in which the remote task waits for a message from us (input-required, auth-required): the run parks. */
export function isInterrupted(state: TaskState | undefined): boolean {
  return state === TaskState.TASK_STATE_INPUT_REQUIRED || state === TaskState.TASK_STATE_AUTH_REQUIRED
}

/** States in which the remote task is still running (submitted, working); anything else needs no cancel. */
export function isActive(state: TaskState | undefined): boolean {
  return state === TaskState.TASK_STATE_SUBMITTED || state === TaskState.TASK_STATE_WORKING
}

export interface StateOutcome {
  stopReason: SubagentStopReason
  /** What to say about it, when it is not plain success. */
  headline?: string
}

/**
 * A final task state as one of our stop reasons: completed → completed, canceled → aborted,
 * failed / rejected → error, anything else → error naming the state. (input-required and
 * auth-required are not final: the run parks with a question, see `question.ts`.) `statusText`:
 * the final status message's text, quoted on one line, without control or hiding characters, cut.
 */
export function outcomeOf(state: TaskState, statusText: string): StateOutcome {
  // The agent's words are quoted after the headline (never as "auth…: <words>", which reads as a credential).
  const words = peerLine(statusText).replace(/\s+/g, ' ').trim()
  const said = words ? ` It said: "${headChars(words, MAX_SAID_CHARS, '…')}"` : ''
  switch (state) {
    case TaskState.TASK_STATE_COMPLETED: return { stopReason: 'completed' }
    case TaskState.TASK_STATE_CANCELED: return { stopReason: 'aborted', headline: `The remote task was canceled.${said}` }
    case TaskState.TASK_STATE_FAILED: return { stopReason: 'error', headline: `The remote task failed.${said}` }
    case TaskState.TASK_STATE_REJECTED: return { stopReason: 'error', headline: `The remote agent rejected the task.${said}` }
    default: return { stopReason: 'error', headline: `The remote task ended in an unknown state (${stateName(state)}).${said}` }
  }
}

export function stateName(state: TaskState | undefined): string {
  if (state === undefined) return 'none'
  const name = TaskState[state] as string | undefined
  return name ? name.replace(/^TASK_STATE_/, '').toLowerCase().replace(/_/g, '-') : String(state)
}
