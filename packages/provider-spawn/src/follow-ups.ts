import { AgentError, type Agent, type InboxMessage, type RunResult } from '@cordis-subagents/agent'
import { addUsage, addWork } from '@cordis-subagents/shared'
import { capDiagnostic, SubagentError } from '@cordis-subagents/subagents-service'

// Off the plain road: the follow-up messages (`run.send`) of an in-process child, entered only once
// a holder sends one (or a run is cancelled after the child was closed to them). The run's steering
// (in-process-provider.ts) makes a `FollowUps` at the first send and asks it, after a `completed`
// turn, whether another turn follows.

/**
 * Most follow-up messages one run takes in all (each one can cost the child another turn). The
 * child's inbox also caps the messages waiting at once (`MAX_INBOX_MESSAGES`, 1,024).
 */
export const MAX_IN_PROCESS_FOLLOW_UPS = 1024

/**
 * A run's follow-ups: posted to the child's inbox, which its loop reads as a user message before its
 * next model call. A turn that ends `completed` with some still unread (it answered in the moment
 * between the post and its next read) is followed by another turn with them, so nothing sent before
 * the result is lost.
 */
export class FollowUps {
  private taken = 0
  /**
   * This run's follow-ups posted to the child's inbox and maybe not read yet. The inbox also holds
   * the results of the child's own background children: those are never taken or counted here.
   */
  private mine = new Set<InboxMessage>()
  /** Follow-ups still waiting when the run closed (withdrawn, and reported in the diagnostic). */
  unread = 0

  constructor(private readonly child: Agent) {}

  send(message: string): void {
    if (this.taken >= MAX_IN_PROCESS_FOLLOW_UPS) {
      throw new SubagentError('INVALID_REQUEST', `This run already took ${MAX_IN_PROCESS_FOLLOW_UPS} follow-up messages (the limit per run); wait for its result, then delegate again.`)
    }
    this.mine.add(this.post(message))
    this.taken++
  }

  /** The run closed: its waiting follow-ups are withdrawn and counted. */
  close(): void {
    this.unread = this.child.inbox.withdraw(this.mine).length
    this.mine = new Set()
  }

  /**
   * After a `completed` turn: the next turn when follow-ups are still unread (the oldest is its
   * prompt; the rest are read before its first model call), else undefined.
   */
  next(turn: (prompt: string) => Promise<RunResult>): Promise<RunResult> | undefined {
    const waiting = this.child.inbox.withdraw(this.mine)
    if (!waiting.length) return undefined
    const mine = this.mine = new Set()
    for (const message of waiting.slice(1)) mine.add(this.post(message.content))
    return turn(waiting[0].content)
  }

  /** `total` with the follow-ups the child never read reported in its diagnostic. */
  noted(total: RunResult): RunResult {
    const { unread } = this
    const note = `${unread} follow-up message${unread === 1 ? ' was' : 's were'} not read: the child stopped (${total.stopReason}) before it read ${unread === 1 ? 'it' : 'them'}.`
    return { ...total, diagnostic: capDiagnostic(total.diagnostic ? `${total.diagnostic} ${note}` : note) }
  }

  private post(message: string): InboxMessage {
    try {
      return this.child.inbox.post(message)
    } catch (error) {
      if (!(error instanceof AgentError)) throw error
      if (error.code === 'DISPOSED') throw notRunning()
      throw new SubagentError('INVALID_REQUEST', `The child refused the follow-up message: ${error.message}`, { cause: error })
    }
  }
}

export function notRunning(): SubagentError {
  return new SubagentError('NOT_RUNNING', 'The child has ended (its result is decided, or it was cancelled); collect its result, then delegate again to continue.')
}

export function throwNotRunning(): never {
  throw notRunning()
}

export function aborted(when: string): SubagentError {
  return new SubagentError('ABORTED', `The delegation was aborted ${when}.`)
}

/** `later` after `earlier`: the sums of both turns, the later one's ending. */
export function combine(earlier: RunResult, later: RunResult): RunResult {
  const result: RunResult = {
    text: later.text.trim() ? later.text : earlier.text,
    stopReason: later.stopReason,
    usage: addUsage(earlier.usage, later.usage),
    steps: earlier.steps + later.steps,
    toolCalls: earlier.toolCalls + later.toolCalls,
    work: {
      own: addWork(earlier.work.own, later.work.own),
      delegated: addWork(earlier.work.delegated, later.work.delegated),
    },
  }
  if (later.diagnostic) result.diagnostic = later.diagnostic
  if (later.budget) result.budget = later.budget
  if (later.question) result.question = later.question
  // A typed child's value is its last turn's answer (`text` is its JSON).
  if (later.value !== undefined) result.value = later.value
  return result
}
