import type { Agent } from '@cordis-subagents/agent'
import { describeError, KeptWith, type PendingQuestion } from '@cordis-subagents/shared'
import type { Logger } from 'cordis'
import type { Delegation } from './run/delegation.js'
import { SubagentError } from './errors.js'
import { idleEndNote } from './run/park-expiry.js'
import type { SubagentHandle, SubagentOutcome } from './types.js'

/** Parked children one parent may hold at once; past it, `hold` refuses with `PARKED_LIMIT`. */
export const MAX_PARKED_PER_PARENT = 64
/** Ended children whose answer a late call of the parent can still join (the newest). */
const MAX_JOINABLE_PER_PARENT = 16

/** How the holder waits for a held child's answer (see `ParkedBook.hold`). */
export interface HoldOptions {
  /** The holder's call suspended on the child's question (escalate): its turn is parked on it. */
  escalated?: boolean
  /**
   * The holder's model was given the question (answer mode): called when someone else answers it
   * (a page, the host by run id), with the outcome that answer leads to, to pass on to the holder;
   * `withdrawn` when the child went on without an answer instead (whoever asked it below ended).
   */
  onAnsweredElsewhere?(next: Promise<SubagentOutcome>, question: PendingQuestion, withdrawn: boolean): void
}

/** The holder's answer: its child and the outcome the answer leads to. */
export interface HeldAnswer {
  run: SubagentHandle
  next: Promise<SubagentOutcome>
}

interface Held {
  run: Delegation
  options: HoldOptions
  /** Set while the holder itself answers (its answer is not news to it). */
  answering: boolean
  /** The question the holder was given last (an escalated holder's calls suspend on it). */
  question?: PendingQuestion
}

/**
 * `ctx.subagents.parked`: the children that parked on a question and wait for their parent (its
 * model, or an escalated call's resume). The book owns them: it
 * disposes each one once it ends, and every one still held when its parent agent is disposed.
 * A parent's book lives as long as the parent agent object (keyed weakly).
 *
 * One question, one answer: whoever answers a held child (its holder, a page or the host by run
 * id), the holder gets the outcome. A child answered elsewhere goes on at once; an escalated
 * holder parked on that question is continued too (its own holder in turn, up to the root agent,
 * which `agent.resume`s: its holder reads the result with `agent.nextResult()`), and its suspended
 * call joins the answer instead of giving another. A child that ends while an escalated holder's
 * calls wait on its question (its `maxParkedMs` passed, it was cancelled or closed) withdraws that
 * question: the holder goes on without an answer, its calls get the child's outcome, and so on up
 * to the root (`agent.withdraw`), so no ancestor waits on a question nobody can answer.
 */
export class ParkedBook {
  private readonly books = new KeptWith<Map<string, Held>>('parked runs held')
  /**
   * Held children that ended after an answer, or whose end withdrew their question: a call still
   * suspended on that question joins the answer or gets the end (newest `MAX_JOINABLE_PER_PARENT`).
   */
  private readonly answered = new KeptWith<Map<string, Delegation>>('answered runs')

  constructor(private readonly log: Logger, private readonly live: Map<string, Delegation>) {}

  /**
   * Takes over a parked run of `parent` (idempotent; a second hold updates `options`): it is
   * disposed when it ends, or when the parent is. Throws `PARKED_LIMIT` when the parent holds
   * `MAX_PARKED_PER_PARENT` already, and `INVALID_REQUEST` for a parent without an inbox (not an
   * Agent of @cordis-subagents/agent).
   */
  hold(parent: Agent, runId: string, options: HoldOptions = {}): void {
    const run = this.live.get(runId)
    if (!run) throw new SubagentError('NOT_FOUND', `Run ${runId} is not live; only a live run can be held.`)
    const book = this.of(parent)
    const known = book.get(run.id)
    if (known) {
      known.options = options
      known.question = run.question ?? known.question
      return
    }
    if (book.size >= MAX_PARKED_PER_PARENT) {
      throw new SubagentError('PARKED_LIMIT',
        `Agent ${parent.id} already has ${MAX_PARKED_PER_PARENT} parked children waiting for answers; answer or close one of them first.`)
    }
    const held: Held = { run, options, answering: false, question: run.question }
    book.set(run.id, held)
    run.verbs.answers.listener = (question, answer, next) => {
      if (!held.answering) this.answeredElsewhere(parent, held, question, answer, next)
    }
    run.ended.then((outcome) => {
      if (book.get(run.id) !== held) return
      book.delete(run.id)
      run.verbs.answers.listener = undefined
      // An escalated holder's calls may still wait on its question: nobody can answer it any more.
      const { question } = held
      const escalated = held.options.escalated && question
      if (run.verbs.answers.any || escalated) this.remember(parent, run)
      const note = () => this.tell(parent, idleEndNote(run, outcome))
      if (escalated) this.withdrawFrom(parent, question, note)
      else note()
      this.dispose(run)
    })
  }

  /** The parent's held run `runId`, if it holds it. */
  get(parent: Agent, runId: string): SubagentHandle | undefined {
    return this.books.get(parent)?.get(runId)?.run
  }

  /** The runs `parent` holds, oldest first. */
  list(parent: Agent): SubagentHandle[] {
    return [...this.books.get(parent)?.values() ?? []].map((held) => held.run)
  }

  /**
   * The holder answers its child `runId`: fulfils with the child's next outcome. Given the
   * `questionId` its call waits on, a question answered already (elsewhere, or for another call of
   * the same reattached task) is joined, not answered again. Undefined when `parent` holds no such
   * child; throws `ALREADY_ANSWERED`, `NOT_PARKED`, `INVALID_REQUEST` or `UNSUPPORTED` as `run.resume`.
   */
  answer(parent: Agent, runId: string, answer: string, questionId?: string): HeldAnswer | undefined {
    const held = this.books.get(parent)?.get(runId)
    const run = held?.run ?? this.answered.get(parent)?.get(runId)
    if (!run) return undefined
    const joined = questionId === undefined || run.question?.id === questionId ? undefined : run.verbs.answers.join(questionId)
    if (joined) return { run, next: joined }
    if (!held) throw run.verbs.answers.refusal(run.id, run.state, questionId)
    held.answering = true
    try {
      return { run, next: run.resume(answer, questionId) }
    } finally {
      held.answering = false
    }
  }

  /**
   * The holder's call suspended on question `questionId` of its child `runId`, which was withdrawn
   * (`agent.withdraw`): fulfils with the outcome the call gets instead of an answer's: the child's
   * next outcome when it went on without one, its final one when it ended. A child still parked on
   * that question is cancelled first (nobody waits for its answer). Undefined when `parent` holds no such child.
   */
  withdrawn(parent: Agent, runId: string, questionId: string): HeldAnswer | undefined {
    const run = this.books.get(parent)?.get(runId)?.run ?? this.answered.get(parent)?.get(runId)
    if (!run) return undefined
    const joined = run.verbs.answers.join(questionId)
    if (joined) return { run, next: joined }
    if (run.state === 'parked' && run.question?.id === questionId) {
      run.cancel(`its question ${questionId} was withdrawn: the agent that waited for its answer went on without one`)
    }
    return { run, next: run.state === 'ended' ? run.ended : run.current() }
  }

  /** Someone other than the holder answered its child (or withdrew its question: no `answer`): the holder gets the outcome. */
  private answeredElsewhere(
    parent: Agent, held: Held, question: PendingQuestion, answer: string | undefined, next: Promise<SubagentOutcome>,
  ): void {
    const { onAnsweredElsewhere, escalated } = held.options
    if (onAnsweredElsewhere) {
      try {
        onAnsweredElsewhere(next, question, answer === undefined)
      } catch (error) {
        this.log.warn('passing on the answered question of run %s failed: %s', held.run.id, describeError(error))
      }
    }
    if (!escalated) return
    if (answer === undefined) this.withdrawFrom(parent, question)
    else this.continueHolder(parent, question, answer)
  }

  /**
   * The escalated holder's calls may wait on `question`, which nobody can answer any more (the child
   * that asked it ended, or went on without an answer): the holder's turn goes on without one, its
   * calls get the child's outcome. A child agent through its own run's `withdraw` (which tells its
   * holder in turn), a root agent through `agent.withdraw` (its holder reads `agent.nextResult()`).
   * A holder busy with a turn is checked again once that leg ends (it may park on the question
   * again); `otherwise` runs when it does not wait on the question.
   */
  private withdrawFrom(parent: Agent, question: PendingQuestion, otherwise?: () => void): void {
    if (parent.disposed) return
    const own = this.runOf(parent)
    if (own ? own.state === 'running' : parent.running) {
      const legEnded: Promise<unknown> = own ? own.current() : parent.nextResult()
      legEnded.then(() => this.withdrawFrom(parent, question, otherwise), () => {})
      return
    }
    if (!waitsOn(parent, question.id)) {
      otherwise?.()
      return
    }
    const failed = (error: unknown) => this.log.warn('agent %s: withdrawing question %s failed: %s', parent.id, question.id, describeError(error))
    try {
      if (own) {
        if (own.state === 'parked') own.verbs.withdraw(question.id).catch(failed)
      } else if (!parent.parent) {
        parent.withdraw(question.id).catch(failed)
      }
    } catch (error) {
      failed(error)
    }
  }

  /**
   * The escalated holder's turn is parked on `question`: continue it with the same answer (its
   * calls on that question join the child's answer). A child agent goes on through its own run
   * (which tells its holder in turn), when that question is the one its turn asks first; a root
   * agent through `agent.resume(answer, { questionId })`, wherever the question is in its step
   * (its other calls keep waiting, and the root parks again on them). A child holder whose turn
   * asks another question first stays parked: its call joins this answer when its turn gets to it.
   */
  private continueHolder(parent: Agent, question: PendingQuestion, answer: string): void {
    if (parent.disposed) return
    const failed = (error: unknown) => this.log.warn('continuing agent %s after its child was answered failed: %s', parent.id, describeError(error))
    const own = this.runOf(parent)
    try {
      if (own) {
        if (parent.parked?.id === question.id && own.state === 'parked' && own.question?.id === question.id) {
          own.resume(answer, question.id).catch(failed)
        }
      } else if (!parent.parent && parent.waitingOn.some((waiting) => waiting.id === question.id)) {
        parent.resume(answer, { questionId: question.id }).catch(failed)
      }
    } catch (error) {
      failed(error)
    }
  }

  /** The live run whose child is `agent`. */
  private runOf(agent: Agent): Delegation | undefined {
    for (const run of this.live.values()) if (run.childId === agent.id) return run
    return undefined
  }

  private remember(parent: Agent, run: Delegation): void {
    let answered = this.answered.get(parent)
    if (!answered) this.answered.set(parent, answered = new Map())
    if (answered.size >= MAX_JOINABLE_PER_PARENT) answered.delete(answered.keys().next().value!)
    answered.set(run.id, run)
  }

  private of(parent: Agent): Map<string, Held> {
    let book = this.books.get(parent)
    if (book) return book
    const inbox = (parent as Partial<Agent> | undefined)?.inbox
    if (typeof inbox?.onClose !== 'function') {
      throw new SubagentError('INVALID_REQUEST', 'Only an agent of @cordis-subagents/agent (with an inbox) can hold parked children.')
    }
    this.books.set(parent, book = new Map())
    const held = book
    // The parent is disposed: nobody is left to answer its parked children.
    inbox.onClose(() => {
      const runs = [...held.values()]
      held.clear()
      this.answered.delete(parent)
      for (const { run } of runs) this.dispose(run)
    })
    return book
  }

  /** Posts `note` to the parent's inbox (its model reads it at its next step); a closed or full inbox is logged. */
  private tell(parent: Agent, note: string | undefined): void {
    if (!note) return
    try {
      parent.inbox.post(note)
    } catch (error) {
      this.log.warn('the note to %s that a parked child ended was not posted: %s', parent.id, describeError(error))
    }
  }

  private dispose(run: Delegation): void {
    run.dispose().catch((error) => this.log.warn('disposing parked run %s failed: %s', run.id, describeError(error)))
  }
}

/** Whether `agent`'s parked turn waits on question `questionId`. */
function waitsOn(agent: Agent, questionId: string): boolean {
  return !agent.disposed && agent.waitingOn.some((waiting) => waiting.id === questionId)
}
