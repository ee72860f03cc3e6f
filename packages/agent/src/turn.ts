import { addUsage, addWork, type BudgetBreach, describeBreach, describeError, emptyUsage, emptyWork, type LimitError, limitStop, type PendingQuestion, totalTokens } from '@cordis-subagents/shared'
import type { ToolResult } from '@cordis-subagents/tools'
import type { Budget } from './budget.js'
import { budgetNoted, systemWithBudget } from './budget-note.js'
import { abortDiagnostic, budgetDiagnostic, droppedCallsNote, FINISH_STOPS, finishDiagnostic, interruptDiagnostic, isInterrupt, limitDiagnostic, policyDiagnostic, type TurnInterrupt } from './stops.js'
import { type Leg, normalizeResponse, openLeg, runToolCalls, type TurnAbort, TurnLimits } from './step.js'
import { appendInbox, type InboxDelegation, type InboxMessage, readsBeforeEnd } from './inbox.js'
import { answerSuspended, budgetQuestion, type ParkedStep, type SuspendedCall } from './parked-turn.js'
import type { TurnOwner } from './turn-owner.js'
import { TypedTurn } from './output.js'
import type { AgentError } from './errors.js'
import type { GenerateRequest, GenerateResponse, ModelToolCall, RunOptions, RunResult, StopReason, ToolMessage } from './types.js'

const NO_MESSAGES: InboxMessage[] = []

/**
 * One turn of an agent: from its prompt (or a wake) to its final stop. A turn that parks on a
 * question (`pending`) keeps its tallies and its suspended calls here until `resume` continues it;
 * each `start` / `resume` call is one *leg* (its own signal, listeners and wall-clock timer).
 */
export class Turn {
  text = ''
  steps = 0
  toolCalls = 0
  own = emptyUsage()
  delegated = emptyUsage()
  ownWork = emptyWork()
  delegatedWork = emptyWork()
  /** Set once tool calls were refused for the tool-call budget: the model gets one last step, without tools. */
  refusedFor?: BudgetBreach
  /** What the turn waits on while parked. */
  parked?: ParkedStep
  parkedAt = 0
  readonly limits: TurnLimits
  /** Steps and tool calls already added to the agent's work tally (a parked turn reports as it parks). */
  reported = { steps: 0, toolCalls: 0 }
  /** Inbox messages read at the current step, and where the first one sits in the transcript (for `interrupt`). */
  private stepMessages = NO_MESSAGES
  private stepMessagesAt = 0
  private stepPushed = 0
  private leg!: Leg
  /** With an output schema: how model calls are shaped and answers reviewed; the accepted value. */
  private readonly typed?: TypedTurn
  private value?: unknown

  constructor(private readonly owner: TurnOwner, readonly budget: Budget) {
    if (owner.agent.output) this.typed = new TypedTurn(owner.agent.output)
    this.limits = new TurnLimits(budget, owner.agent.maxToolCallsPerStep, (breach) => owner.host.budgetReached(owner.agent, breach))
  }

  /** Runs the turn from its prompt (none for a wake: the inbox is its input). */
  start(prompt: string | undefined, abort: TurnAbort, options: RunOptions): Promise<RunResult> {
    const { transcript } = this.owner.agent
    this.leg = openLeg(this, this.owner, abort, options, prompt ?? '')
    transcript.beginTurn()
    if (prompt !== undefined) transcript.push({ role: 'user', content: prompt })
    if (abort.signal.aborted) return Promise.resolve(this.stopForAbort())
    return this.loop()
  }

  /**
   * Continues the parked turn with `answer`: to the suspended calls it answers, or past the budget
   * it waited on. Without an answer, question `questionId` was withdrawn: its calls' tools give their results.
   */
  async resume(
    answer: string | undefined, abort: TurnAbort, options: RunOptions, questionId = this.parked!.question.id,
  ): Promise<RunResult> {
    const parked = this.parked!
    this.parked = undefined
    // Parked time does not count toward this run's wall-time budget.
    this.budget.pauseClock(Date.now() - this.parkedAt)
    this.leg = openLeg(this, this.owner, abort, options, answer ?? '', questionId)
    this.leg.emit?.(answer === undefined ? { type: 'resumed', step: parked.step, questionId, withdrawn: true } : { type: 'resumed', step: parked.step, questionId })
    if (abort.signal.aborted) return this.abandon(parked)
    if (parked.budget) {
      if (parked.budget.budget === 'toolCalls') {
        const still = this.limits.reached(() => this.budget.check('toolCalls'))
        const suspendFor = this.limits.takeSuspension()
        if (suspendFor) return this.parkOn({ step: parked.step, question: budgetQuestion(suspendFor), suspended: [], budget: suspendFor })
        if (still) return this.stopForBudget(still)
        this.refusedFor = undefined
      }
      return this.loop()
    }
    const outcome = await answerSuspended(this, this.owner, this.leg, parked, answer, questionId)
    if (outcome === 'aborted') return this.abandon(parked)
    if (outcome) return this.parkOn(outcome)
    return this.loop()
  }

  /** Ends a parked turn for good (its agent is disposed): the open calls get an error result, the transcript is balanced. */
  close(reason: string): void {
    const parked = this.parked
    if (!parked) return
    this.parked = undefined
    this.answerOpenCalls(reason, parked.note)
    this.owner.agent.transcript.endTurn()
  }

  /** A resume aborted before the parked step was fully answered: its open calls get the cancel result, then the turn ends. */
  private abandon(parked: ParkedStep): RunResult {
    this.answerOpenCalls('Cancelled: the run was aborted before this tool call was answered.', parked.note)
    return this.stopForAbort()
  }

  /** Answers the last step's open calls with `reason`, then its dropped-calls note, if any. */
  private answerOpenCalls(reason: string, note: string | undefined): void {
    const { transcript } = this.owner.agent
    transcript.balance(reason)
    if (note) transcript.push({ role: 'user', content: note })
  }

  /** A tool call's result: into the transcript, its usage and work into the tallies. */
  answer(call: ModelToolCall, result: ToolResult): void {
    this.rollUp(result)
    // Built by assignment: a spread into the literal takes V8's slow path.
    const message: ToolMessage = { role: 'tool', toolCallId: call.id, name: call.name, content: result.content }
    if (result.isError) message.isError = true
    if (result.images?.length) message.images = result.images
    this.owner.agent.transcript.push(message)
  }

  private async loop(): Promise<RunResult> {
    const { agent, host } = this.owner
    const { budget, limits, leg } = this
    const { signal } = leg.abort
    const resolved = host.resolveModel(agent.model)
    if ('error' in resolved) return this.finish('error', resolved.error)
    const complete = () => (this.refusedFor ? this.stopForBudget(this.refusedFor) : this.finish('completed'))

    while (true) {
      if (signal.aborted) return this.stopForAbort()
      if (this.steps >= agent.maxSteps) {
        return this.finish('max-steps', `Stopped after ${agent.maxSteps} steps without a final answer (the step limit).`)
      }
      const before = limits.reached(() => budget.overtime() ?? budget.check('steps') ?? budget.check('tokens'))
      const suspendFor = limits.takeSuspension()
      if (suspendFor) return this.parkOn({ step: this.steps, question: budgetQuestion(suspendFor), suspended: [], budget: suspendFor })
      if (before) return this.stopForBudget(before)
      const reason = host.stopBefore(agent, this.steps + 1)
      if (reason !== undefined) return this.finish('budget', policyDiagnostic(reason, this.steps + 1))
      const step = ++this.steps
      budget.charge('steps', 1)
      leg.emit?.({ type: 'step-start', step })
      this.stepMessagesAt = agent.transcript.length
      this.stepMessages = agent.usedInbox?.size ? agent.usedInbox.take() : NO_MESSAGES
      this.stepPushed = this.stepMessages.length ? appendInbox((message) => agent.transcript.push(message), this.stepMessages) : 0
      for (const { content, delegation } of this.stepMessages) {
        if (delegation) this.rollUp(delegation)
        leg.emit?.(delegation?.structured === undefined ? { type: 'message', step, content } : { type: 'message', step, content, structured: delegation.structured })
      }

      // A compactor may shorten what this call reads (never the transcript); before the gate, so one that calls a model holds no slot.
      const { hooks } = leg
      const messages = hooks ? await hooks.beforeLLM(step, agent.persona, agent.transcript.snapshot()).catch(() => undefined) : undefined
      if (hooks && (signal.aborted || hooks.failure)) return signal.aborted ? this.stopForAbort() : this.failed(hooks.failure!)

      let response: GenerateResponse
      const began = hooks ? hooks.now() : 0
      try {
        leg.watch?.modelStart(step, agent.model)
        // The gate wraps the model call only (its slots are held until the call settles, never across tools), rate-limit retries too.
        const request: GenerateRequest = {
          system: budgetNoted.has(agent) ? systemWithBudget(agent, budget, step) : agent.persona,
          messages: messages ?? agent.transcript.snapshot(),
          tools: this.refusedFor ? [] : agent.tools.list(),
          signal,
          maxTokens: agent.maxTokens,
          modelId: resolved.modelId,
          maxToolCalls: agent.maxToolCallsPerStep,
        }
        this.typed?.shape(request, resolved.model)
        const generation = this.owner.track(host.modelGate ? host.modelGate.generate(resolved, request) : resolved.model.generate(request))
        response = normalizeResponse(await Promise.race([generation, leg.abort.aborted]), `${agent.id}-${step}`, agent.maxToolCallsPerStep)
      } catch (error) {
        leg.watch?.modelEnd(step, undefined, error, signal.aborted)
        hooks?.modelDone(step, agent.model, began, undefined)
        if (signal.aborted) return this.stopForAbort()
        return this.finish('error', `The model "${agent.model ?? 'default'}" failed: ${describeError(error)}`)
      }

      leg.watch?.modelEnd(step, response)
      hooks?.modelDone(step, agent.model, began, response)
      // The model answered the messages this step read: they are part of the conversation now.
      this.stepMessages = NO_MESSAGES
      this.own = addUsage(this.own, response.usage)
      agent.usage.own = addUsage(agent.usage.own, response.usage)
      if (response.usage) budget.charge('tokens', totalTokens(response.usage))
      if (response.text.trim()) {
        this.text = response.text
        leg.emit?.({ type: 'text', step, text: response.text })
      }
      const calls = response.toolCalls
      agent.transcript.push(calls.length
        ? { role: 'assistant', content: response.text, toolCalls: calls }
        : { role: 'assistant', content: response.text })
      leg.emit?.({ type: 'step-end', step, finishReason: response.finishReason, usage: response.usage })
      // Calls past maxToolCallsPerStep were cut from the response: one note answers them all, after the kept calls' results.
      const dropped = response.droppedToolCalls
      const note = dropped ? droppedCallsNote(calls.length, dropped, agent.maxToolCallsPerStep) : undefined
      if (hooks) await hooks.afterLLM(step, response)
      if (hooks && (signal.aborted || hooks.failure)) return signal.aborted ? this.stopForAbort() : this.failed(hooks.failure!, note)

      const failure = FINISH_STOPS[response.finishReason]
      if (failure) {
        const diagnostic = response.diagnostic ?? finishDiagnostic(response.finishReason)
        this.answerOpenCalls(`Not run: the model's response ended with "${response.finishReason}".`, note)
        return this.finish(failure, diagnostic)
      }
      const typed = this.typed?.review(response.text, calls, (message) => agent.transcript.push(message), note)
      if (typed === 'again') continue
      if (typed) {
        if ('fail' in typed) return this.finish('invalid_output', typed.fail)
        this.value = typed.value
        this.text = typed.text
        if (agent.usedInbox?.feedsOnce(this, this.steps < agent.maxSteps)) continue
      }
      if (typed || !calls.length) {
        // Messages that arrived meanwhile get one more step, open holds are waited for first (a typed
        // answer too: it stands unless the model answers again); with no step left the answer stands.
        // Without an inbox (a plain delegation's road) nothing is awaited and inbox.ts is not called.
        const { usedInbox: inbox } = agent, left = this.steps < agent.maxSteps
        const more = inbox
          ? await readsBeforeEnd(inbox, left, !!typed, leg.abort, (holds) => leg.emit?.({ type: 'waiting', step, holds }))
          : left && !typed && signal.aborted && 'aborted'
        if (more === 'aborted') return this.stopForAbort()
        if (!more) return complete()
        continue
      }
      if (this.refusedFor) {
        // It was told its tool budget is spent and still asks for tools: stop here, loudly.
        const breach = budget.check('toolCalls') ?? this.refusedFor
        this.answerOpenCalls(`Not run: ${describeBreach(breach)} is spent.`, note)
        return this.stopForBudget(breach)
      }

      const plan = limits.admit(calls)
      if (plan.refusedFor) this.refusedFor = plan.refusedFor
      this.toolCalls += plan.admitted
      leg.abort.raiseListenerLimit()
      const results = await runToolCalls({
        agent, calls, refusals: plan.refusals, step, signal, aborted: leg.abort.aborted, emit: leg.emit, watch: leg.watch, hooks,
        track: (work) => this.owner.track(work),
      })
      let suspended: SuspendedCall[] | undefined
      for (let i = 0; i < results.length; i++) {
        const suspension = results[i].suspend
        if (suspension) (suspended ??= []).push({ call: calls[i], suspension })
        else this.answer(calls[i], results[i])
      }
      if (hooks?.failure) return this.failed(hooks.failure, note)
      if (suspended) return this.parkOn({ step, question: suspended[0].suspension.question, suspended, note })
      if (note) agent.transcript.push({ role: 'user', content: note })
    }
  }

  /** A delegation's usage and work (a tool result, or a background child's result read from the inbox). */
  private rollUp(result: InboxDelegation): void {
    const { agent } = this.owner
    this.delegated = addUsage(this.delegated, result.usage)
    agent.usage.delegated = addUsage(agent.usage.delegated, result.usage)
    if (!result.work) return
    this.ownWork.delegations++
    agent.work.own.delegations++
    this.delegatedWork = addWork(this.delegatedWork, result.work)
    agent.work.delegated = addWork(agent.work.delegated, result.work)
  }

  private parkOn(parked: ParkedStep): RunResult {
    this.parked = parked
    // An interrupt after the resume must not put back messages a completed model call already read.
    this.stepMessages = NO_MESSAGES
    this.parkedAt = Date.now()
    this.leg.emit?.({ type: 'pending', step: parked.step, question: parked.question })
    return this.end('pending', undefined, undefined, parked.question)
  }

  private finish(stopReason: StopReason, diagnostic?: string, breach?: BudgetBreach, code?: AgentError['code']): RunResult {
    this.owner.agent.transcript.endTurn()
    return this.end(stopReason, diagnostic, breach, undefined, code)
  }

  /** An operator's hook failed: the run ends `error` with `HOOK_FAILED`, open calls answered before the step's dropped-calls note. */
  private failed(failure: AgentError, note?: string): RunResult {
    this.answerOpenCalls('Not run: an operator\'s hook failed and the run ended.', note)
    return this.finish('error', failure.message, undefined, failure.code)
  }

  private end(stopReason: StopReason, diagnostic?: string, breach?: BudgetBreach, question?: PendingQuestion, code?: AgentError['code']): RunResult {
    this.leg.close()
    const { agent } = this.owner
    this.ownWork = { steps: this.steps, toolCalls: this.toolCalls, delegations: this.ownWork.delegations }
    const { reported } = this
    agent.work.own = addWork(agent.work.own, { steps: this.steps - reported.steps, toolCalls: this.toolCalls - reported.toolCalls })
    this.reported = { steps: this.steps, toolCalls: this.toolCalls }
    const result: RunResult = {
      text: this.text,
      stopReason,
      usage: addUsage(this.own, this.delegated),
      steps: this.steps,
      toolCalls: this.toolCalls,
      work: { own: this.ownWork, delegated: this.delegatedWork },
    }
    if (diagnostic) result.diagnostic = diagnostic
    if (breach) result.budget = breach
    if (question) result.question = question
    if (code) result.code = code
    if (this.value !== undefined && stopReason === 'completed') result.value = this.value
    this.leg.watch?.end(result)
    return result
  }

  private stopForBudget(breach: BudgetBreach): RunResult {
    return this.finish('budget', budgetDiagnostic(breach), breach)
  }

  private stopForAbort(): RunResult {
    const { signal } = this.leg.abort
    if (isInterrupt(signal.reason)) return this.interrupted(signal.reason)
    const limit = limitStop(signal.reason)
    if (!limit) return this.finish('aborted', abortDiagnostic(signal))
    const breach = (signal.reason as LimitError).breach
    return this.finish(limit, limitDiagnostic(signal.reason as LimitError), breach)
  }

  /**
   * `agent.interrupt()`: inbox messages this step read that the model has not answered yet go back to
   * the inbox (and out of the transcript), then the turn ends.
   */
  private interrupted(reason: TurnInterrupt): RunResult {
    const { agent } = this.owner
    const messages = this.stepMessages
    if (messages.length) {
      this.stepMessages = NO_MESSAGES
      agent.transcript.removeInFlight(this.stepMessagesAt, this.stepPushed)
      // Their usage and work were rolled into this turn already: they go back as plain messages, with their senders.
      agent.inbox.putBack(messages.map(({ content, from }) => (from === undefined ? { content } : { content, from })))
    }
    return this.finish('interrupted', interruptDiagnostic(reason))
  }
}
