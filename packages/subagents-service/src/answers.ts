import type { PendingQuestion } from '@cordis-subagents/shared'
import { SubagentError } from './errors.js'
import type { SubagentOutcome } from './types.js'

// One question, one answer: the question a run answered last, and the outcome that answer led to.

/** Told once for each answer a run takes (whoever gave it), after the run went on with it. */
export type AnswerListener = (question: PendingQuestion, answer: string, next: Promise<SubagentOutcome>) => void

/**
 * The answer side of a parked run: the question it answered last and the next outcome that
 * answer led to, so a second answer to it is refused `ALREADY_ANSWERED` and a waiter that comes
 * late (a parent's suspended call, a reattached call) can join the answer instead of giving another.
 */
export class Answers {
  private last?: { question: PendingQuestion; next: Promise<SubagentOutcome> }
  /** The run's holder (the parked book), told of every answer. */
  listener?: AnswerListener

  /** Whether the run took an answer yet. */
  get answered(): boolean {
    return !!this.last
  }

  /** Records that `question` was answered with `answer`; `next` is the outcome it leads to. */
  took(question: PendingQuestion, answer: string, next: Promise<SubagentOutcome>): void {
    this.last = { question, next }
    this.listener?.(question, answer, next)
  }

  /** The outcome the answer to question `questionId` led to, when that is the question answered last. */
  join(questionId: string): Promise<SubagentOutcome> | undefined {
    return this.last?.question.id === questionId ? this.last.next : undefined
  }

  /**
   * Why run `runId` (in `state`) takes no answer now: `ALREADY_ANSWERED` when the question meant
   * (`questionId`, else the one asked last) was answered already, else `NOT_PARKED`.
   */
  refusal(runId: string, state: string, questionId?: string): SubagentError {
    const last = this.last?.question
    if (last && (questionId === undefined || questionId === last.id)) {
      return new SubagentError('ALREADY_ANSWERED', `The question ${last.id} of run ${runId} (${JSON.stringify(last.text.slice(0, 200))}) `
        + `was answered already; its result went to the parent that waits for it. The run is ${state}; nothing was passed on.`)
    }
    const which = questionId === undefined ? '' : ` (not on question ${questionId})`
    return new SubagentError('NOT_PARKED', `Run ${runId} is ${state}, not parked on a question${which}; only a parked run takes an answer.`)
  }
}
