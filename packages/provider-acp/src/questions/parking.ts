import type * as Acp from '@agentclientprotocol/sdk'
import { answerProblem, expiringQuestion, type PendingQuestion } from '@cordis-subagents/shared'
import { SubagentError, type SubagentResult } from '@cordis-subagents/subagents-service'

/** Most questions of one run waiting at once (an agent asking several permissions in parallel); more are denied. */
export const MAX_WAITING_QUESTIONS = 8

/** A question the run waits on, and how an answer reaches the agent. */
export interface Waiting {
  question: PendingQuestion
  /** A permission request's options (kept in the run's checkpoint, to read an answer after a restore). */
  options?: Acp.PermissionOption[]
  /** Checks an answer (throws `INVALID_REQUEST` naming what would do) and returns what delivers it. */
  accept(answer: string): () => void
  /** The run ends without an answer (cancel, maxParkedMs, its process died): let the agent go. */
  drop(): void
}

export interface ParkingHooks {
  /** The run parked on `question` (its holder gets a `pending` result now). */
  parked(question: PendingQuestion): void
  /** `question` waited `maxParkedMs` without an answer. */
  expired(question: PendingQuestion): void
  maxParkedMs: number
}

/**
 * The questions one run waits on, oldest first: the run is parked while one waits. Only the
 * oldest is shown to the holder; the next is shown once it is answered. While a question waits,
 * a `maxParkedMs` timer runs (and nothing else of the run's: the provider keeps no turn timer).
 */
export class Parking {
  private queue: Waiting[] = []
  private timer?: NodeJS.Timeout

  constructor(private readonly hooks: ParkingHooks) {}

  /** The question shown to the holder, while the run is parked. */
  get question(): PendingQuestion | undefined {
    return this.queue[0]?.question
  }

  /** What waits for the shown question, while the run is parked. */
  get shown(): Waiting | undefined {
    return this.queue[0]
  }

  /** Queues a question; false when `MAX_WAITING_QUESTIONS` already wait (the caller answers it some other way). */
  add(waiting: Waiting): boolean {
    if (this.queue.length >= MAX_WAITING_QUESTIONS) return false
    this.queue.push(waiting)
    if (this.queue.length === 1) this.show()
    return true
  }

  /**
   * Answers the shown question. Throws `INVALID_REQUEST` (and nothing changes) for an empty or
   * too long answer, or one the question does not take.
   */
  answer(answer: unknown): void {
    const waiting = this.queue[0]
    if (!waiting) throw new SubagentError('INVALID_REQUEST', 'Nothing is waiting for an answer.')
    const problem = answerProblem(answer)
    if (problem) throw new SubagentError('INVALID_REQUEST', problem)
    const deliver = waiting.accept(answer as string)
    this.queue.shift()
    clearTimeout(this.timer)
    deliver()
    if (this.queue.length) this.show()
  }

  /** Lets every waiting question go unanswered (the run is ending). */
  dropAll(): void {
    clearTimeout(this.timer)
    for (const waiting of this.queue.splice(0)) waiting.drop()
  }

  private show() {
    const shown = this.queue[0]!
    // Shown with its deadline (`expiresAt`), the same object each time it is shown again (a refused answer).
    const question = shown.question = expiringQuestion(shown.question, this.hooks.maxParkedMs)
    this.hooks.parked(question)
    // A parked run must not keep the host alive by this timer (its process does, while it lives).
    this.timer = setTimeout(() => this.hooks.expired(question), this.hooks.maxParkedMs)
    this.timer.unref()
  }
}

/**
 * A run's outcomes: the first (`run.result`), then one per answer (`run.resume`). Parking reports
 * `pending` and opens the next; the run's end reports its final result to whichever is open.
 */
export class Outcomes {
  readonly first: Promise<SubagentResult>
  /** The outcome a `resume` now waits for (after the end: the final result). */
  latest!: Promise<SubagentResult>
  private resolve?: (result: SubagentResult) => void

  constructor() {
    this.first = this.open()
  }

  /** Reports `result` to the open outcome; `more` opens the next (the run parked). */
  report(result: SubagentResult, more: boolean): void {
    const resolve = this.resolve
    this.resolve = undefined
    resolve?.(result)
    if (more) this.open()
  }

  private open(): Promise<SubagentResult> {
    return this.latest = new Promise<SubagentResult>((resolve) => this.resolve = resolve)
  }
}
