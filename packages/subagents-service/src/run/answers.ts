import { headChars, type PendingQuestion } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type { SubagentOutcome } from '../types.js'

// One question, one answer: the questions a run answered, and the outcome each answer led to.

/** Answered questions a run remembers for late waiters (the newest); an older one is still refused, but no longer joined. */
const MAX_ANSWERED_PER_RUN = 16

/**
 * Told once for each answer a run takes (whoever gave it), after the run went on with it; `answer`
 * undefined when the question was withdrawn instead (the run went on without an answer).
 */
export type AnswerListener = (question: PendingQuestion, answer: string | undefined, next: Promise<SubagentOutcome>) => void

/**
 * The answer side of a parked run: the questions it answered and the next outcome each answer led
 * to, so a second answer to one is refused `ALREADY_ANSWERED` and a waiter that comes late (a
 * parent's suspended call, a reattached call) can join the answer instead of giving another.
 */
export class Answers {
  private readonly answered = new Map<string, Promise<SubagentOutcome>>()
  private last?: PendingQuestion
  /** Questions among `answered` that were withdrawn, not answered. */
  private readonly withdrawn = new Set<string>()
  /** The run's holder (the parked book), told of every answer. */
  listener?: AnswerListener

  /** Whether the run took an answer yet. */
  get any(): boolean {
    return !!this.last
  }

  /** Records that `question` was answered with `answer`; `next` is the outcome it leads to. */
  took(question: PendingQuestion, answer: string, next: Promise<SubagentOutcome>): void {
    this.keep(question, next)
    this.listener?.(question, answer, next)
  }

  /** Records that `question` was withdrawn (the run went on without an answer); `next` is the outcome that leads to. */
  withdrew(question: PendingQuestion, next: Promise<SubagentOutcome>): void {
    this.keep(question, next)
    this.withdrawn.add(question.id)
    this.listener?.(question, undefined, next)
  }

  private keep(question: PendingQuestion, next: Promise<SubagentOutcome>): void {
    this.last = question
    this.answered.delete(question.id)
    this.withdrawn.delete(question.id)
    this.answered.set(question.id, next)
    if (this.answered.size > MAX_ANSWERED_PER_RUN) {
      const oldest = this.answered.keys().next().value!
      this.answered.delete(oldest)
      this.withdrawn.delete(oldest)
    }
  }

  /**
   * The outcome the answer to question `questionId` led to; when that outcome asked a question that
   * was answered since, the outcome of that answer (and so on), so a late waiter is never handed a
   * question nobody waits on any more.
   */
  join(questionId: string): Promise<SubagentOutcome> | undefined {
    const next = this.answered.get(questionId)
    return next?.then((outcome) => {
      const asked = outcome.stopReason === 'pending' ? outcome.question?.id : undefined
      return (asked !== undefined && asked !== questionId && this.join(asked)) || outcome
    })
  }

  /**
   * Why run `runId` (in `state`) takes no answer now: `ALREADY_ANSWERED` when the question meant
   * (`questionId`, else the one asked last) was answered already, `NOT_PARKED` when it was
   * withdrawn or nothing is asked.
   */
  refusal(runId: string, state: string, questionId?: string): SubagentError {
    const last = this.last
    const meant = questionId ?? last?.id
    if (meant !== undefined && this.withdrawn.has(meant)) {
      return new SubagentError('NOT_PARKED', `The question ${meant} of run ${runId} was withdrawn: whoever asked it ended without an answer, `
        + `and the run went on without one. The run is ${state}; nothing was passed on.`)
    }
    if (last && (questionId === undefined || this.answered.has(questionId) || questionId === last.id)) {
      const quoted = `${last.id} (${JSON.stringify(headChars(last.text, 200))})`
      const which = questionId === undefined || questionId === last.id ? quoted : questionId
      return new SubagentError('ALREADY_ANSWERED', `The question ${which} of run ${runId} was answered already; its result went to the `
        + `parent that waits for it. The run is ${state}; nothing was passed on.`)
    }
    const which = questionId === undefined ? '' : ` (not on question ${questionId})`
    return new SubagentError('NOT_PARKED', `Run ${runId} is ${state}, not parked on a question${which}; only a parked run takes an answer.`)
  }
}
