import { answerProblem, describeError, headChars, type PendingQuestion } from '@cordis-subagents/shared'
import { Answers } from './answers.js'
import { capDiagnostic } from '../diagnostic.js'
import { SubagentError } from '../errors.js'
import type { RunHost } from './run-host.js'
import type { SubagentOutcome, SubagentResult, SubagentRun, SubagentRunInfo, SubagentRunState } from '../types.js'

// A run's turns after the first: where it is parked, and the host verbs that move it on.

/** What the parking needs of its run (the `Delegation`). */
export interface ParkedRunPort {
  readonly id: string
  readonly info: SubagentRunInfo
  readonly reattachKey?: string
  checkpoint(): unknown
  readonly providerName: string
  /** The provider's run, once handed over. */
  readonly providerRun?: SubagentRun
  /** Handed over, not ended, not cancelled. */
  readonly open: boolean
  /** Hands what `call` settles with to the run (a throw or rejection: an `error` result), which parks or settles on it. */
  follow(call: () => unknown, failed: string): void
}

/**
 * The idle side of a run: the outcome it is parked on (`pending` with its question, or
 * `interrupted`), the waiters for its next outcome, and the verbs that move it on (`resume`,
 * `wake`, `interrupt`, `close`). A parked run makes no calls and holds no timers here.
 */
export class Parking {
  /** The outcome the run is idle on, while it is. */
  private idle?: SubagentOutcome
  private latest?: SubagentOutcome
  private ended = false
  private waiters: ((outcome: SubagentOutcome) => void)[] = []
  /** Made on first ask (most runs are never held): see `final`. */
  private settleFinal?: (outcome: SubagentOutcome) => void
  private finalOutcome?: Promise<SubagentOutcome>
  /** The question answered last and where its answer led (one question, one answer). */
  private answerBook?: Answers
  /** Made at the first question: a run that never parks never makes one. */
  get answers(): Answers { return this.answerBook ??= new Answers() }

  constructor(private readonly run: ParkedRunPort, private readonly host: RunHost) {}

  get state(): SubagentRunState {
    if (this.ended) return 'ended'
    if (!this.idle) return 'running'
    return this.idle.stopReason === 'pending' ? 'parked' : 'interrupted'
  }

  /** The run's final outcome (never `pending` / `interrupted`); never rejects. */
  get final(): Promise<SubagentOutcome> {
    if (this.ended) return Promise.resolve(this.latest!)
    return this.finalOutcome ??= new Promise((resolve) => this.settleFinal = resolve)
  }

  /** The final outcome once the run ended. */
  get ending(): SubagentOutcome | undefined {
    return this.ended ? this.latest : undefined
  }

  get question(): PendingQuestion | undefined {
    return this.idle?.question
  }

  /** An outcome arrived: idle on a pending / interrupted one; `final` ends the run for good. */
  deliver(outcome: SubagentOutcome, final: boolean): void {
    this.latest = outcome
    this.ended = final
    this.idle = final ? undefined : outcome
    if (final) this.settleFinal?.(outcome)
    const waiters = this.waiters
    this.waiters = []
    for (const waiter of waiters) waiter(outcome)
  }

  /** The run parks on `outcome` (`pending` or `interrupted`): tells listeners and the journal; gives the outcome back. */
  park(outcome: SubagentOutcome): SubagentOutcome {
    this.deliver(outcome, false)
    const { question } = outcome
    if (question) {
      this.host.note('parked', this.run, question)
      this.host.events.emit('subagent/pending', this.run.info, question)
    }
    return outcome
  }

  /** The result of a run cancelled while idle (no turn of it would settle it). */
  cancelled(reason: string | undefined): SubagentResult {
    const where = this.question ? `parked on the question ${JSON.stringify(headChars(this.question.text, 200))}` : 'interrupted'
    const output = this.latest?.output ?? ''
    return { stopReason: 'aborted', output, diagnostic: capDiagnostic(`The run was cancelled while ${where}${reason ? `: ${reason}` : ''}.`) }
  }

  /** The provider run's checkpoint (JSON), or undefined when it has none or it throws. */
  checkpoint(): unknown {
    try {
      return this.run.providerRun?.checkpoint?.()
    } catch (error) {
      this.host.log.warn('provider %s: checkpoint() of run %s threw: %s', this.run.providerName, this.run.id, describeError(error))
      return undefined
    }
  }

  /**
   * The latest outcome when ended or parked on a question, else the next one (an interrupted run
   * waits for the host to wake or close it).
   */
  current(): Promise<SubagentOutcome> {
    if ((this.ended || this.state === 'parked') && this.latest) return Promise.resolve(this.latest)
    return this.next()
  }

  /** The next outcome to arrive. */
  next(): Promise<SubagentOutcome> {
    return new Promise((resolve) => this.waiters.push(resolve))
  }

  /**
   * Answers the question the run is parked on (`questionId`, when given, must be that question).
   * Refuses `ALREADY_ANSWERED` for a question answered before, `NOT_PARKED` when nothing is asked.
   */
  resume(answer: string, questionId?: string): Promise<SubagentOutcome> {
    const question = this.question
    if (!question || !this.run.open || (questionId !== undefined && question.id !== questionId)) {
      throw this.answers.refusal(this.run.id, this.state, questionId)
    }
    const problem = answerProblem(answer)
    if (problem) throw new SubagentError('INVALID_REQUEST', problem)
    const resume = this.verb('resume')
    const next = this.goOn(() => {
      this.host.note('resumed', this.run, question.id, answer)
      this.host.events.emit('subagent/resume', this.run.info, question.id)
      return resume(answer)
    })
    this.answers.took(question, answer, next)
    return next
  }

  /**
   * Goes on past question `questionId` of the parked turn without an answer: whoever asked it (a
   * child of this run's child) ended, so the call that waited on it gets that child's outcome (the
   * provider's `withdraw`). Recorded as withdrawn, not answered: a later answer to it is refused
   * `NOT_PARKED`. Throws `NOT_PARKED` when the run is not parked, `UNSUPPORTED` without the verb.
   */
  withdraw(questionId: string): Promise<SubagentOutcome> {
    const question = this.question
    if (!question || !this.run.open) throw this.answers.refusal(this.run.id, this.state, questionId)
    const withdraw = this.verb('withdraw')
    // Its own question (the one its holder's call waits on) ends here; a later one of its turn leaves it asked.
    const own = question.id === questionId
    const next = this.goOn(() => {
      this.host.note('withdrawn', this.run, questionId)
      if (own) this.host.events.emit('subagent/resume', this.run.info, questionId)
      return withdraw(questionId)
    })
    if (own) this.answers.withdrew(question, next)
    return next
  }

  wake(): Promise<SubagentOutcome> {
    if (this.state !== 'interrupted' || !this.run.open) {
      throw new SubagentError('NOT_PARKED', `Run ${this.run.id} is ${this.state}; only an interrupted run can be woken.`)
    }
    const wake = this.verb('wake')
    return this.goOn(() => wake())
  }

  /** Ends the turn in flight as `interrupted`; resolves with that outcome. */
  interrupt(): Promise<SubagentOutcome> {
    if (this.state !== 'running' || !this.run.open) {
      throw new SubagentError('NOT_RUNNING', `Run ${this.run.id} is ${this.state}; only a running turn can be interrupted.`)
    }
    const interrupt = this.verb('interrupt')
    const next = this.next()
    interrupt()
    return next
  }

  /** Ends the run `closed` (a running one is interrupted first); resolves with the final outcome. */
  async close(): Promise<SubagentOutcome> {
    if (this.ended || !this.run.open) throw new SubagentError('NOT_RUNNING', `Run ${this.run.id} has ended; there is nothing to close.`)
    const close = this.verb('close')
    if (this.state === 'running') {
      const outcome = await this.interrupt()
      if (this.ended) return outcome
    }
    return this.goOn(() => close())
  }

  /** The provider run's verb, bound; `UNSUPPORTED` when it has none. */
  private verb<K extends 'resume' | 'withdraw' | 'wake' | 'interrupt' | 'close'>(name: K): NonNullable<SubagentRun[K]> {
    const run = this.run.providerRun as SubagentRun
    const verb = run?.[name]
    if (typeof verb !== 'function') {
      throw new SubagentError('UNSUPPORTED', `Provider "${this.run.providerName}" cannot ${name} its runs.`)
    }
    return (verb as (...args: unknown[]) => unknown).bind(run) as NonNullable<SubagentRun[K]>
  }

  /** Leaves the idle outcome and hands the provider's next result to the run. */
  private goOn(call: () => Promise<SubagentResult> | void): Promise<SubagentOutcome> {
    this.idle = undefined
    const next = this.next()
    this.run.follow(call, `failed to continue run ${this.run.id}`)
    return next
  }

}
