import { TaskState } from '@a2a-js/sdk'
import { LimitError } from './bounded-fetch.js'
import { A2aError } from './errors.js'
import { RemoteIdTooLongError } from './remote-ids.js'
import { isFinal, stateName } from './task-state.js'
import type { TaskView } from './task-view.js'

/** What ended the wait for the remote to name the task early: the request's signal, or the provider stopping. */
type OpeningEnd = 'abort' | 'stop'

/**
 * The time between sending a task and the remote naming it (its first stream event, or the send's
 * answer). An abort or a stop in it does not cut the request: the remote may hold the task already,
 * and only its id lets us cancel it. The request goes on for at most `cancelGrace` more (and never
 * past its own `requestTimeout`); then `cut` closes it with a `LimitError` saying so.
 */
export class Opening {
  /** Why the wait was ended early, once it was. */
  end?: OpeningEnd
  private timer?: NodeJS.Timeout

  constructor(private readonly grace: number, private readonly cut: (reason: LimitError) => void) {}

  close(end: OpeningEnd): void {
    if (this.end) return
    this.end = end
    const after = end === 'abort' ? 'the abort' : 'the provider stopped'
    this.timer = setTimeout(() => this.cut(new LimitError(`no answer naming the task came within ${this.grace} ms (cancelGrace) after ${after}`)), this.grace)
  }

  done(): void {
    clearTimeout(this.timer)
  }
}

/**
 * A send that failed: `A2A_SEND_FAILED` (naming the bound when the remote's task or context id was too long), or
 * `ABORTED` when an abort or a stop came first (no task id came back, none to cancel).
 */
export function sendFailure(agent: string, end: OpeningEnd | undefined, streaming: boolean, why: string, cause: unknown): A2aError {
  if (end === 'stop') {
    return new A2aError('ABORTED', `The provider was stopped while the remote agent ${agent} was accepting the task, and its send failed (${why}); `
      + 'no task id came back to cancel.', { cause })
  }
  if (end === 'abort' && streaming) {
    return new A2aError('ABORTED', `The delegation was aborted before the remote agent ${agent} sent its first event; the stream was closed (${why}); `
      + 'no task id came back to cancel.', { cause })
  }
  if (end === 'abort') {
    return new A2aError('ABORTED', `The delegation was aborted while the remote agent ${agent} was accepting the task, and its send failed (${why}); `
      + 'no task id came back to cancel.', { cause })
  }
  if (cause instanceof RemoteIdTooLongError) {
    // A task named with a context over the bound: the start fails, and nothing more goes to the remote (no cancel either).
    const task = cause.taskId ? `task ${cause.taskId}` : 'its task'
    const left = cause.kind === 'context' ? ` The run does not follow, answer or cancel ${task} (it may still run there).` : ''
    return new A2aError('A2A_SEND_FAILED', `The remote agent ${agent} answered the send, but ${cause.message}.${left}`, { cause })
  }
  return new A2aError('A2A_SEND_FAILED', `The remote agent ${agent} did not accept the task: ${why}.`, { cause })
}

/**
 * The start was aborted or stopped, but the remote named its task first: the run was disposed (so
 * `CancelTask` went out, bounded by `cancelGrace`); says what became of the task.
 */
export function acceptedThenEnded(agent: string, end: OpeningEnd, view: TaskView): A2aError {
  const how = end === 'stop' ? 'The provider was stopped' : 'The delegation was aborted'
  const task = view.taskId ? `task ${view.taskId}` : undefined
  const fate = !task ? 'it answered with a message, so no task runs there'
    : view.state === TaskState.TASK_STATE_CANCELED ? `${task} was created there and then cancelled (CancelTask)`
    : view.state !== undefined && isFinal(view.state) ? `${task} was created there and had already ended (${stateName(view.state)})`
    : `${task} was created there; CancelTask was sent for it, unconfirmed within cancelGrace (last seen ${stateName(view.state)})`
  return new A2aError('ABORTED', `${how} while the remote agent ${agent} was accepting the task; ${fate}. No child is running.`)
}
