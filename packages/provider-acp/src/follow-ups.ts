import { MAX_MESSAGE_LENGTH } from '@cordis-subagents/shared'
import { capDiagnostic, SubagentError, type SubagentResult } from '@cordis-subagents/subagents-service'

/** Most follow-up messages waiting for the current turn to end; `send` past it throws `INVALID_REQUEST`. */
export const MAX_QUEUED_FOLLOW_UPS = 32
/** Most follow-up messages one run takes in all: each is a whole prompt turn of the agent. */
export const MAX_FOLLOW_UPS_PER_RUN = 256
/** Largest follow-up message, in UTF-16 code units (about 1 MiB of text, as the service allows). */
const MAX_FOLLOW_UP_LENGTH = MAX_MESSAGE_LENGTH

/**
 * The follow-up messages (`run.send`) of one ACP run. ACP has no way into a turn that is
 * running, so they wait here; when a turn ends `end_turn`, the run sends the oldest as the next
 * `session/prompt` in the same session instead of settling. Closing (the run settles or is
 * cancelled) drops what waits; the count goes into the result's diagnostic.
 */
export class FollowUps {
  private readonly queue: string[] = []
  private taken = 0
  private open = true
  private dropped = 0

  /** Turns prompted so far (the request's own prompt is turn 1). */
  get turns(): number {
    return this.taken - this.queue.length + 1
  }

  push(message: string): void {
    if (!this.open) throw notRunning()
    if (typeof message !== 'string' || !message.trim()) throw new SubagentError('INVALID_REQUEST', 'A follow-up message must be a non-empty string.')
    if (message.length > MAX_FOLLOW_UP_LENGTH) {
      throw new SubagentError('INVALID_REQUEST', `A follow-up message is at most ${MAX_FOLLOW_UP_LENGTH} characters (got ${message.length}); shorten it.`)
    }
    if (this.queue.length >= MAX_QUEUED_FOLLOW_UPS) {
      throw new SubagentError('INVALID_REQUEST', `${MAX_QUEUED_FOLLOW_UPS} follow-up messages already wait for the agent's turn to end; wait for it before sending more.`)
    }
    if (this.taken >= MAX_FOLLOW_UPS_PER_RUN) {
      throw new SubagentError('INVALID_REQUEST', `This run already took ${MAX_FOLLOW_UPS_PER_RUN} follow-up messages (the limit per run); wait for its result, then delegate again.`)
    }
    this.queue.push(message)
    this.taken++
  }

  /** The oldest waiting message, taken off the queue; undefined when none waits or the run closed. */
  next(): string | undefined {
    return this.open ? this.queue.shift() : undefined
  }

  /** No more messages: later pushes throw `NOT_RUNNING`; what waits is dropped (and counted). */
  close(): void {
    if (!this.open) return
    this.open = false
    this.dropped = this.queue.splice(0).length
  }

  /** Closes, and names the messages that were never sent in `result`'s diagnostic. */
  settle(result: SubagentResult): SubagentResult {
    this.close()
    if (!this.dropped) return result
    const note = `${this.dropped} follow-up message${this.dropped === 1 ? ' was' : 's were'} not delivered: `
      + `the run ended (${result.stopReason}) before ${this.dropped === 1 ? 'it' : 'they'} could be sent as a prompt.`
    return { ...result, diagnostic: capDiagnostic(result.diagnostic ? `${note} ${result.diagnostic}` : note) }
  }
}

export function notRunning(): SubagentError {
  return new SubagentError('NOT_RUNNING', 'The ACP child has ended (its result is decided, or it was cancelled); collect its result, then delegate again to continue.')
}
