import type { PendingQuestion } from '@cordis-subagents/shared'
import { SubagentError } from './errors.js'
import type { SubagentOutcome } from './types.js'

// One question, one answer: the questions a run answered, and the outcome each answer led to.

/** Answered questions a run remembers for late waiters (the newest); an older one is still refused, but no longer joined. */
const MAX_ANSWERED_PER_RUN = 16

/** Told once for each answer a run takes (whoever gave it), after the run went on with it. */
export type AnswerListener = (question: PendingQuestion, answer: string, next: Promise<SubagentOutcome>) => void

/**
 * The answer side of a parked run: the questions it answered and the next outcome each answer led
 * to, so a second answer to one is refused `ALREADY_ANSWERED` and a waiter that comes late (a
 * parent's suspended call, a reattached call) can join the answer instead of giving another.
 */
export class Answers {
  private readonly answered = new Map<string, Promise<SubagentOutcome>>()
  private last?: PendingQuestion
  /** The run's holder (the parked book), told of every answer. */
  listener?: AnswerListener

  /** Whether the run took an answer yet. */
  get any(): boolean {
    return !!this.last
  }

  /** Records that `question` was answered with `answer`; `next` is the outcome it leads to. */
  took(question: PendingQuestion, answer: string, next: Promise<SubagentOutcome>): void {
    this.last = question
    this.answered.delete(question.id)
    this.answered.set(question.id, next)
    if (this.answered.size > MAX_ANSWERED_PER_RUN) this.answered.delete(this.answered.keys().next().value!)
    this.listener?.(question, answer, next)
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
   * (`questionId`, else the one asked last) was answered already, else `NOT_PARKED`.
   */
  refusal(runId: string, state: string, questionId?: string): SubagentError {
    const last = this.last
    if (last && (questionId === undefined || this.answered.has(questionId) || questionId === last.id)) {
      const which = questionId === undefined || questionId === last.id ? `${last.id} (${JSON.stringify(last.text.slice(0, 200))})` : questionId
      return new SubagentError('ALREADY_ANSWERED', `The question ${which} of run ${runId} was answered already; its result went to the `
        + `parent that waits for it. The run is ${state}; nothing was passed on.`)
    }
    const which = questionId === undefined ? '' : ` (not on question ${questionId})`
    return new SubagentError('NOT_PARKED', `Run ${runId} is ${state}, not parked on a question${which}; only a parked run takes an answer.`)
  }
}
