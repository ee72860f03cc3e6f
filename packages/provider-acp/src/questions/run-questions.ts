import type * as Acp from '@agentclientprotocol/sdk'
import { headBytes, type PendingQuestion, questionFromMeta, type Redactor } from '@cordis-subagents/shared'
import { capDiagnostic, SubagentError, type SubagentResult } from '@cordis-subagents/subagents-service'
import { escalatedElicitation } from './elicitation.js'
import { escalatedPermission, namedOption } from './escalation.js'
import { type AcpCheckpoint, permissionAnswerPrompt } from '../resume/restore-point.js'
import { Outcomes, Parking, type Waiting } from './parking.js'

export interface QuestionHooks {
  /** The run's result so far (output, usage, work) with `stopReason: 'pending'`. */
  pendingResult(): SubagentResult
  /** Ends the run (a question waited too long). */
  cancel(reason: string): void
  /** A progress note for the holder. */
  status(text: string): void
  redactor: Redactor
  maxParkedMs: number
  /** The run ended while parked or idle (nothing waits on a turn of it): the service ends it with `result` at once. */
  idleEnded(result: SubagentResult): void
}

/**
 * The questions of one run and its outcomes: an escalated permission request (`permission:
 * escalate`) or a served host of ours whose turn parked (`_meta.cordisSubagents.question`) parks
 * the run; `answer` (the run's `resume`) delivers the holder's answer and waits for the next outcome.
 */
export class RunQuestions {
  readonly outcomes = new Outcomes()
  /** False while a served host's turn ended on a question, or a restored run waits: no prompt is in flight. */
  turnInFlight = true
  /** A restored run's first prompt turn (after the answer, or on `wake`). */
  private prompt?: (text: string) => void
  private readonly parking: Parking
  /** The question that waited maxParkedMs: the run ends `timeout`. */
  private expired?: PendingQuestion

  constructor(private readonly hooks: QuestionHooks) {
    this.parking = new Parking({
      maxParkedMs: hooks.maxParkedMs,
      parked: (question) => this.outcomes.report({ ...hooks.pendingResult(), question }, true),
      expired: (question) => {
        this.expired = question
        hooks.cancel(`the question waited maxParkedMs (${hooks.maxParkedMs} ms) without an answer`)
      },
    })
  }

  /** The question shown to the holder while the run is parked. */
  get parked(): PendingQuestion | undefined {
    return this.parking.question
  }

  /** A permission request to ask the holder; undefined when too many wait already (it is answered by policy then). */
  escalate(params: Acp.RequestPermissionRequest, title: string): Promise<Acp.RequestPermissionResponse> | undefined {
    const { waiting, response } = escalatedPermission(params, this.hooks.redactor)
    if (!this.parking.add(waiting)) return undefined
    this.hooks.status(`permission asked: ${title}`)
    return response
  }

  /**
   * An agent's form elicitation for this run's session (`sessionId`) with `permission: escalate`: parks
   * the run on it like a permission request. Any other (another session's, URL mode, too many waiting,
   * another permission mode) is declined.
   */
  elicit(
    params: Acp.CreateElicitationRequest, sessionId: string | undefined, escalate: boolean,
  ): Acp.CreateElicitationResponse | Promise<Acp.CreateElicitationResponse> {
    const ours = escalate && 'sessionId' in params && params.sessionId === sessionId
    const asked = ours ? escalatedElicitation(params, this.hooks.redactor) : undefined
    if (!asked || !this.parking.add(asked.waiting)) return { action: 'decline' }
    this.hooks.status('input asked (elicitation)')
    return asked.response
  }

  /**
   * A turn's end from a host of ours that parked on a question (`_meta.cordisSubagents.question`
   * with `end_turn`): parks this run on it, and `prompt(answer)` will be the next turn. False when
   * the response carries no (well-formed) question.
   */
  served(response: Acp.PromptResponse, prompt: (answer: string) => void): boolean {
    const question = response.stopReason === 'end_turn' ? questionFromMeta(response._meta) : undefined
    if (!question) return false
    this.turnInFlight = false
    const waiting: Waiting = {
      question,
      accept: (answer) => () => {
        this.turnInFlight = true
        prompt(answer)
      },
      // No turn is in flight: nothing to tell the agent.
      drop: () => {},
    }
    if (this.parking.add(waiting)) return true
    this.turnInFlight = true
    return false
  }

  /** The parked question and a permission request's options, for the run's checkpoint (nothing while it runs). */
  saved(): Pick<AcpCheckpoint, 'question' | 'options'> {
    const waiting = this.parking.shown
    if (!waiting) return {}
    return waiting.options ? { question: waiting.question, options: waiting.options } : { question: waiting.question }
  }

  /**
   * A run restored from a checkpoint parks on its recorded question. The agent's permission
   * request died with its process, so the answer becomes the session's next prompt (for a
   * permission: what was asked and the option chosen, see `permissionAnswerPrompt`). One that was
   * not parked is idle (`interrupted`) until `wake` prompts it with a message `send` queued.
   */
  restored(point: AcpCheckpoint, prompt: (text: string) => void): void {
    const { question, options } = point
    this.turnInFlight = false
    this.prompt = prompt
    if (!question) return this.outcomes.report({ ...this.hooks.pendingResult(), stopReason: 'interrupted' }, true)
    this.parking.add({
      question,
      ...options ? { options } : {},
      accept: (answer) => {
        const text = question.kind === 'permission' && options
          ? permissionAnswerPrompt(question, namedOption(answer, options, this.hooks.redactor)) : answer
        return () => {
          this.turnInFlight = true
          prompt(text)
        }
      },
      drop: () => {},
    })
  }

  /** `wake` of a run restored idle: prompts `message` (the oldest one `send` queued) as its next turn. */
  wake(message: string | undefined): Promise<SubagentResult> {
    if (this.turnInFlight || this.parking.question || !this.prompt) {
      throw new SubagentError('INVALID_REQUEST', 'This ACP run is not idle (its turn is running or it waits for an answer); only a run restored idle can be woken.')
    }
    if (message === undefined) throw new SubagentError('INVALID_REQUEST', 'Nothing to wake on: send the run a message first.')
    const next = this.outcomes.latest
    this.turnInFlight = true
    this.prompt(message)
    return next
  }

  /**
   * The run's `resume` while it is live (throws `INVALID_REQUEST` when nothing waits). An answer
   * the question does not take (no option named, empty, too long) leaves the run parked: the next
   * outcome is `pending` with the same question again and a diagnostic that says why and lists the
   * options. (A throw would reach the service as a failed resume, which ends the run.)
   */
  answer(answer: string): Promise<SubagentResult> {
    const question = this.parking.question
    if (!question) {
      throw new SubagentError('INVALID_REQUEST', 'This ACP run is not waiting for an answer (its turn is running); answer it when its result is pending.')
    }
    const next = this.outcomes.latest
    try {
      this.parking.answer(answer)
    } catch (error) {
      if (!(error instanceof SubagentError)) throw error
      this.hooks.status(`answer refused: ${error.message}`)
      const diagnostic = capDiagnostic(`[INVALID_REQUEST] ${error.message} The question is asked again.`)
      this.outcomes.report({ ...this.hooks.pendingResult(), diagnostic, question }, true)
      return next
    }
    this.hooks.status(`answered: ${headBytes(answer, 200)}`)
    return next
  }

  /** Lets every waiting question go (escalated permission requests are answered `cancelled`, as after session/cancel). */
  dropAll(): void {
    this.parking.dropAll()
  }

  /**
   * Reports the run's final result to the open outcome. After a question waited maxParkedMs the
   * run was cancelled for it: it ends `timeout` (a limit is never a person's cancel), the question named.
   */
  finish(result: SubagentResult): void {
    // Expired: the cancel that followed dropped the question already.
    const idle = !!this.expired || !!this.parking.question || !this.turnInFlight
    this.parking.dropAll()
    if (this.expired) {
      const what = this.hooks.redactor.redact(headBytes(this.expired.text, 300))
      const note = `The run waited maxParkedMs (${this.hooks.maxParkedMs} ms) for an answer to its ${this.expired.kind} question `
        + `(${JSON.stringify(what)}) and got none, so the question was answered cancelled and the run ended. `
        + 'Answer pending questions sooner (ctx.subagents.pending() lists them), or raise maxParkedMs on the provider.'
      result = { ...result, stopReason: 'timeout', diagnostic: capDiagnostic(result.diagnostic ? `${note} ${result.diagnostic}` : note) }
    }
    this.outcomes.report(result, false)
    if (idle) this.hooks.idleEnded(result)
  }
}
