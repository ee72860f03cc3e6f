import { type Agent, AgentError, type InboxMessage, type RunResult } from '@cordis-subagents/agent'
import { addUsage, addWork } from '@cordis-subagents/shared'
import { capDiagnostic, SubagentError } from '@cordis-subagents/subagents-service'

/**
 * Most follow-up messages one run takes in all (each one can cost the child another turn). The
 * child's inbox also caps the messages waiting at once (`MAX_INBOX_MESSAGES`, 1,024).
 */
export const MAX_IN_PROCESS_FOLLOW_UPS = 1024

/**
 * Follow-up messages (`run.send`) for an in-process child. While a turn runs, a message goes to
 * the child's inbox, which its loop reads as a user message before its next model call. A turn
 * that ends `completed` with messages still unread (it answered in the moment between the post
 * and its next read) is followed by another turn with them, so nothing sent before the result
 * is lost. Once the run's result is decided, or it was cancelled, `send` throws `NOT_RUNNING`.
 */
export class Steering {
  private open = true
  private taken = 0
  /**
   * This run's follow-ups posted to the child's inbox and maybe not read yet. The inbox also holds
   * the results of the child's own background children: those are never taken or counted here.
   */
  private mine?: Set<InboxMessage>
  /** Follow-ups still waiting when the run closed (withdrawn, and reported in the diagnostic). */
  private unread = 0
  /** The sum of this run's turns before the one in flight (or parked), once there were any. */
  private before?: RunResult

  constructor(private readonly child: Agent) {}

  send(message: string): void {
    if (!this.open) throw notRunning()
    if (this.taken >= MAX_IN_PROCESS_FOLLOW_UPS) {
      throw new SubagentError('INVALID_REQUEST', `This run already took ${MAX_IN_PROCESS_FOLLOW_UPS} follow-up messages (the limit per run); wait for its result, then delegate again.`)
    }
    (this.mine ??= new Set()).add(this.post(message))
    this.taken++
  }

  /** No more messages (a cancel, or the result is decided): later sends throw `NOT_RUNNING`; its waiting follow-ups are withdrawn. */
  close(): void {
    if (!this.open) return
    this.open = false
    // A run that sent nothing has nothing to withdraw (and leaves the child's inbox unmade).
    this.unread = this.mine ? this.child.inbox.withdraw(this.mine).length : 0
    this.mine = undefined
  }

  /**
   * Runs `first()` (a turn: `run`, `resume` or `wake`), then one more turn (`turn`) for each time a
   * `completed` turn ended with follow-ups unread. A final result closes the steering: the decision
   * to settle and the close happen together, so a send either made it into a turn or throws. A
   * `pending` / `interrupted` result leaves it open for the segment that continues the run. Usage
   * and work of every turn of the run add up (a resumed turn's result already covers its whole
   * turn); the text is the last non-empty one (the one output rule); the stop reason is the last turn's.
   */
  run(first: () => Promise<RunResult>, turn: (prompt: string) => Promise<RunResult>): Promise<RunResult> {
    // A promise chain, not an async function: a run waiting on its child's turn holds one
    // reaction here, not a suspended frame (a wide fan-out keeps thousands waiting).
    let started: Promise<RunResult>
    try {
      started = first()
    } catch (error) {
      this.close()
      return Promise.reject(error)
    }
    return this.follow(started, turn)
  }

  private follow(turnDone: Promise<RunResult>, turn: (prompt: string) => Promise<RunResult>): Promise<RunResult> {
    return turnDone.then((current) => this.after(current, this.before ? combine(this.before, current) : current, turn), (error) => {
      this.close()
      throw error
    })
  }

  /** After a turn: one more turn when a `completed` one left follow-ups unread, else the run's result. */
  private after(current: RunResult, total: RunResult, turn: (prompt: string) => Promise<RunResult>): RunResult | Promise<RunResult> {
    let idle = false
    try {
      if (this.open && !this.child.disposed && current.stopReason === 'completed') {
        const waiting = this.mine ? this.child.inbox.withdraw(this.mine) : []
        if (waiting.length) {
          // The oldest follow-up is the turn's prompt; the rest are read before its first model call.
          const mine = this.mine = new Set()
          for (const message of waiting.slice(1)) mine.add(this.post(message.content))
          this.before = total
          const next = turn(waiting[0].content)
          idle = true // the next turn decides
          return this.follow(next, turn)
        }
      }
      // A parked turn goes on later (its resumed result covers it whole); an interrupted one is done.
      if (current.stopReason === 'interrupted') this.before = total
      idle = current.stopReason === 'pending' || current.stopReason === 'interrupted'
    } finally {
      if (!idle) this.close()
    }
    const { unread } = this
    if (!unread) return total
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

function notRunning(): SubagentError {
  return new SubagentError('NOT_RUNNING', 'The child has ended (its result is decided, or it was cancelled); collect its result, then delegate again to continue.')
}

/** `later` after `earlier`: the sums of both turns, the later one's ending. */
function combine(earlier: RunResult, later: RunResult): RunResult {
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
  return result
}
