import {
  type AbortScope, addUsage, addWork, type BudgetBreach, describeBreach, describeError, handleRejection, type PendingQuestion, totalTokens,
  withScopeSignal,
} from '@cordis-subagents/shared'
import type { ToolExecContext, ToolResult } from '@cordis-subagents/tools'
import type { TurnAbort } from './transcript.js'
import { Budget, TurnLimits } from './budget.js'
import { budgetNoted, systemWithBudget } from './budget-note.js'
import { budgetDiagnostic, cancelled, droppedCallsNote, FINISH_STOPS, finishDiagnostic, policyDiagnostic } from './stops.js'
import { appendInbox, type InboxMessage, readsBeforeEnd } from './inbox.js'
import { answerOpenCalls, budgetQuestion, hookFailed, type ParkedStep, parkOn, stopForAbort, type SuspendedCall } from './parked-turn.js'
import { checkSuspended } from './suspension.js'
import { NO_USAGE, NO_WORK, normalizeResponse, rollUp } from './transcript.js'
import type { Leg, TurnOwner } from './turn-owner.js'
import { TypedTurn } from './output.js'
import type { AgentError } from './errors.js'
import type { AgentEvent, BudgetLimits, GenerateRequest, GenerateResponse, ModelToolCall, RunOptions, RunResult, StopReason, ToolMessage } from './types.js'

// One turn of an agent and each step of it: the leg it runs under (abort, listener, observers,
// wall-clock timer), the limits checked before each step, the model call, the tool calls it asked for.

const NO_MESSAGES: InboxMessage[] = []
const NOTHING_REPORTED = Object.freeze({ steps: 0, toolCalls: 0 })

/**
 * One turn of an agent: from its prompt (or a wake) to its final stop. A turn that parks on a
 * question (`pending`) keeps its tallies and its suspended calls here until `resume` continues it;
 * each `start` / `resume` call is one *leg* (its own signal, listeners and wall-clock timer).
 */
export class Turn {
  text = ''
  steps = 0
  toolCalls = 0
  // Shared frozen zeros until the first charge: every tally is replaced, never changed in place.
  own = NO_USAGE
  delegated = NO_USAGE
  ownWork = NO_WORK
  delegatedWork = NO_WORK
  /** Set once tool calls were refused for the tool-call budget: the model gets one last step, without tools. */
  refusedFor?: BudgetBreach
  parked?: ParkedStep
  parkedAt = 0
  /** Steps and tool calls already added to the agent's work tally (a parked turn reports as it parks). */
  reported: { readonly steps: number; readonly toolCalls: number } = NOTHING_REPORTED
  /** Inbox messages read at the current step, and where the first one sits in the transcript (for `interrupt`). */
  stepMessages = NO_MESSAGES
  stepMessagesAt = 0
  stepPushed = 0
  leg!: Leg
  /** With an output schema: how model calls are shaped and answers reviewed; the accepted value. */
  private readonly typed?: TypedTurn
  private value?: unknown
  readonly limits: TurnLimits

  constructor(readonly owner: TurnOwner, readonly budget: Budget) {
    if (owner.agent.output) this.typed = new TypedTurn(owner.agent.output)
    this.limits = new TurnLimits(budget, owner)
  }

  /** Runs the turn from its prompt (none for a wake: the inbox is its input). */
  start(prompt: string | undefined, abort: TurnAbort, options: RunOptions): Promise<RunResult> {
    const { transcript } = this.owner.agent
    this.open(abort, options, prompt ?? '')
    transcript.beginTurn()
    if (prompt !== undefined) transcript.push({ role: 'user', content: prompt })
    if (abort.aborted) return Promise.resolve(stopForAbort(this))
    return this.loop()
  }

  /** Opens a leg: nothing is reported after it closes, its timer is disarmed and `onSpend` unwatched. */
  open(abort: TurnAbort, options: RunOptions, prompt: string, resumedQuestion?: string): void {
    const { owner } = this
    const { onEvent, onSpend } = options
    const unwatch = onSpend && owner.ownsRootBudget ? this.budget.watch(onSpend) : undefined
    const watch = owner.host.watch(owner.agent, prompt, resumedQuestion)
    const hooks = owner.host.hookRun(owner.agent, this, abort)
    this.limits.armWallClock(abort)
    const leg = this.leg = new OpenLeg(abort, watch, hooks, this.limits, unwatch)
    if (onEvent) {
      leg.emit = (event: AgentEvent) => {
        // Nothing is reported after the leg ended (e.g. a late onUpdate from a tool that ignored the abort).
        if (leg.ended) return
        try { handleRejection(onEvent(event)) } catch { /* a progress listener must never break the loop */ }
      }
    }
  }

  /** A tool call's result: into the transcript, its usage and work into the tallies. */
  answer(call: ModelToolCall, result: ToolResult): void {
    rollUp(this, this.owner.agent, result)
    // Built by assignment: a spread into the literal takes V8's slow path.
    const message: ToolMessage = { role: 'tool', toolCallId: call.id, name: call.name, content: result.content }
    if (result.isError) message.isError = true
    if (result.images?.length) message.images = result.images
    this.owner.agent.transcript.push(message)
  }

  async loop(): Promise<RunResult> {
    const { agent, host } = this.owner
    const { budget, leg } = this
    const { abort } = leg
    const resolved = host.resolveModel(agent.model)
    if ('error' in resolved) return this.finish('error', resolved.error)
    while (true) {
      // The step's bookkeeping and its answer's handling are methods of their own: a child waiting on its model holds
      // this frame, whose size is the number of locals here.
      const step = this.beginStep()
      if (typeof step !== 'number') return step
      // A compactor may shorten what this call reads (never the transcript); before the gate, so one that calls a model holds no slot.
      const { hooks } = leg
      const messages = hooks ? await hooks.beforeLLM(step, agent.persona, agent.transcript.snapshot()).catch(() => undefined) : undefined
      if (hooks && (abort.aborted || hooks.failure)) return abort.aborted ? stopForAbort(this) : hookFailed(this, hooks.failure!)

      let response: GenerateResponse
      const began = hooks ? hooks.now() : 0
      try {
        leg.watch?.modelStart(step, agent.model)
        // The gate wraps the model call only (its slots are held until the call settles, never across tools), rate-limit retries too.
        const request: GenerateRequest = new StepRequest(
          budgetNoted.has(agent) ? systemWithBudget(agent, budget, step) : agent.persona,
          messages ?? agent.transcript.snapshot(), this.refusedFor ? [] : agent.tools.list(), abort, agent, resolved.modelId,
        )
        this.typed?.shape(request, resolved.model)
        const generation = host.modelGate ? host.modelGate.generate(resolved, request) : resolved.model.generate(request)
        response = normalizeResponse(await leg.abort.race(generation), `${agent.id}-${step}`, agent.maxToolCallsPerStep)
      } catch (error) {
        leg.watch?.modelEnd(step, undefined, error, abort.aborted)
        hooks?.modelDone(step, agent.model, began, undefined)
        if (abort.aborted) return stopForAbort(this)
        return this.finish('error', `The model "${agent.model ?? 'default'}" failed: ${describeError(error)}`)
      }

      const outcome = await this.afterModel(step, response, began)
      if (outcome) return outcome
    }
  }

  /** Checks the limits before a step, counts it and reads the inbox into it: the step's number, or the turn's end. */
  private beginStep(): RunResult | number {
    const { agent, host } = this.owner
    const { budget, limits, leg } = this
    // Every race of the step before has settled (its model call, its tool calls): their entries go.
    leg.abort.stepDone()
    if (leg.abort.aborted) return stopForAbort(this)
    if (this.steps >= agent.maxSteps) return this.finish('max-steps', `Stopped after ${agent.maxSteps} steps without a final answer (the step limit).`)
    const before = limits.beforeStep()
    const suspendFor = limits.takeSuspension()
    if (suspendFor) return parkOn(this, { step: this.steps, question: budgetQuestion(suspendFor), suspended: [], budget: suspendFor })
    if (before) return this.stopForBudget(before)
    const reason = host.stopBefore(agent, this.steps + 1)
    if (reason !== undefined) return this.finish('budget', policyDiagnostic(reason, this.steps + 1))
    const step = ++this.steps
    budget.charge('steps', 1)
    leg.emit?.({ type: 'step-start', step })
    this.stepMessagesAt = agent.transcript.length
    const inbox = agent.usedInbox
    this.stepMessages = inbox?.size ? inbox.take() : NO_MESSAGES
    this.stepPushed = this.stepMessages.length ? appendInbox((message) => agent.transcript.push(message), this.stepMessages) : 0
    for (const { content, delegation } of this.stepMessages) {
      if (delegation) rollUp(this, agent, delegation)
      leg.emit?.(delegation?.structured === undefined ? { type: 'message', step, content } : { type: 'message', step, content, structured: delegation.structured })
    }
    return step
  }

  /** The model's answer: into the tallies and the transcript, then the end of the turn, or its tool calls; undefined: next step. */
  private async afterModel(step: number, response: GenerateResponse, began: number): Promise<RunResult | undefined> {
    const { agent } = this.owner
    const { budget, limits, leg } = this
    const { abort, hooks } = leg
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
    agent.transcript.push(calls.length ? { role: 'assistant', content: response.text, toolCalls: calls } : { role: 'assistant', content: response.text })
    leg.emit?.({ type: 'step-end', step, finishReason: response.finishReason, usage: response.usage })
    // Calls past maxToolCallsPerStep were cut from the response: one note answers them all, after the kept calls' results.
    const dropped = response.droppedToolCalls
    const note = dropped ? droppedCallsNote(calls.length, dropped, agent.maxToolCallsPerStep) : undefined
    if (hooks) await hooks.afterLLM(step, response)
    if (hooks && (abort.aborted || hooks.failure)) return abort.aborted ? stopForAbort(this) : hookFailed(this, hooks.failure!, note)

    const failure = FINISH_STOPS[response.finishReason]
    if (failure) {
      answerOpenCalls(this, `Not run: the model's response ended with "${response.finishReason}".`, note)
      return this.finish(failure, response.diagnostic ?? finishDiagnostic(response.finishReason))
    }
    const typed = this.typed?.review(response.text, calls, (message) => agent.transcript.push(message), note)
    if (typed === 'again') return undefined
    if (typed) {
      if ('fail' in typed) return this.finish('invalid_output', typed.fail)
      this.value = typed.value
      this.text = typed.text
      if (agent.usedInbox?.feedsOnce(this, this.steps < agent.maxSteps)) return undefined
    }
    if (typed || !calls.length) {
      // Messages that arrived meanwhile get one more step, open holds are waited for first (a typed
      // answer too: it stands unless the model answers again); with no step left the answer stands.
      // Without an inbox (a plain delegation's road) nothing is awaited and inbox.ts is not called.
      const { usedInbox } = agent, left = this.steps < agent.maxSteps
      const more = usedInbox
        ? await readsBeforeEnd(usedInbox, left, !!typed, abort, (holds) => leg.emit?.({ type: 'waiting', step, holds }))
        : left && !typed && abort.aborted && 'aborted'
      if (more === 'aborted') return stopForAbort(this)
      if (!more) return this.refusedFor ? this.stopForBudget(this.refusedFor) : this.finish('completed')
      return undefined
    }
    if (this.refusedFor) {
      // It was told its tool budget is spent and still asks for tools: stop here, loudly.
      const breach = budget.check('toolCalls') ?? this.refusedFor
      answerOpenCalls(this, `Not run: ${describeBreach(breach)} is spent.`, note)
      return this.stopForBudget(breach)
    }
    const plan = limits.admit(calls)
    if (plan.refusedFor) this.refusedFor = plan.refusedFor
    this.toolCalls += plan.admitted
    leg.abort.raiseListenerLimit()
    const results = await this.runTools(calls, plan.refusals, step)
    let suspended: SuspendedCall[] | undefined
    for (let i = 0; i < results.length; i++) {
      const suspension = results[i].suspend
      if (suspension) (suspended ??= []).push({ call: calls[i], suspension })
      else this.answer(calls[i], results[i])
    }
    if (hooks?.failure) return hookFailed(this, hooks.failure, note)
    if (suspended) return parkOn(this, { step, question: suspended[0].suspension.question, suspended, note })
    if (note) agent.transcript.push({ role: 'user', content: note })
    return undefined
  }

  /** Every call of a step, run concurrently; results in call order. */
  private runTools(calls: ModelToolCall[], refusals: Map<number, string>, step: number): Promise<ToolResult[]> {
    const { agent } = this.owner
    const { abort, emit, watch, hooks } = this.leg
    return Promise.all(calls.map(async (call, index) => {
      emit?.({ type: 'tool-call', step, call })
      watch?.toolStart(step, call)
      let result: ToolResult
      let refusal = refusals.get(index)
      let began = 0
      if (hooks) {
        if (refusal === undefined && call.invalidInput === undefined) refusal = await hooks.beforeTool(step, call)
        began = hooks.now()
      }
      if (refusal !== undefined) result = { isError: true, content: refusal }
      else if (call.invalidInput !== undefined) result = { isError: true, content: `Invalid arguments for tool "${call.name}": ${call.invalidInput}` }
      else {
        // A tool gets an update sink only when someone listens to this turn (`onUpdate` is optional).
        const exec: ToolExecContext = withScopeSignal(new ToolCall(abort, agent, call.id))
        if (emit) exec.onUpdate = (update) => emit({ type: 'tool-update', step, toolCallId: call.id, name: call.name, update })
        const pending = agent.tools.execute({ id: call.id, name: call.name, input: call.input }, exec)
        result = await abort.race(pending).catch(cancelled)
        if (result.suspend !== undefined) result = checkSuspended(call, result)
      }
      watch?.toolEnd(step, call, result)
      if (hooks) await hooks.afterTool(step, call, result, began, refusal !== undefined)
      emit?.({ type: 'tool-result', step, toolCallId: call.id, name: call.name, result })
      return result
    }))
  }

  finish(stopReason: StopReason, diagnostic?: string, breach?: BudgetBreach, code?: AgentError['code']): RunResult {
    this.owner.agent.transcript.endTurn()
    return this.end(stopReason, diagnostic, breach, undefined, code)
  }

  end(stopReason: StopReason, diagnostic?: string, breach?: BudgetBreach, question?: PendingQuestion, code?: AgentError['code']): RunResult {
    this.leg.close()
    const { agent } = this.owner
    this.ownWork = { steps: this.steps, toolCalls: this.toolCalls, delegations: this.ownWork.delegations }
    const { reported } = this
    agent.work.own = addWork(agent.work.own, { steps: this.steps - reported.steps, toolCalls: this.toolCalls - reported.toolCalls })
    this.reported = { steps: this.steps, toolCalls: this.toolCalls }
    const result: RunResult = {
      text: this.text, stopReason, usage: addUsage(this.own, this.delegated), steps: this.steps, toolCalls: this.toolCalls,
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

  stopForBudget(breach: BudgetBreach): RunResult { return this.finish('budget', budgetDiagnostic(breach), breach) }
}

/** The budget an agent spends from (checked before it spends): the one carved for it, else carved from its parent's, else a root's. */
export function spendingBudget(carved: Budget | undefined, parent: Budget | undefined, limits: BudgetLimits | undefined): Budget {
  const budget = carved ?? (parent ? parent.child(limits) : Budget.root(limits))
  budget.adopt()
  return budget
}

/** A leg (turn-owner.ts) as a class: closing it is a method, not a closure per leg. */
class OpenLeg implements Leg {
  emit?: (event: AgentEvent) => void
  ended = false
  constructor(
    readonly abort: TurnAbort, readonly watch: Leg['watch'], readonly hooks: Leg['hooks'],
    private readonly limits: TurnLimits, private readonly unwatch: (() => void) | undefined,
  ) {}

  close(): void {
    this.ended = true
    this.limits.disarmWallClock()
    this.unwatch?.()
  }
}

/**
 * A step's model request. Its `signal` is an own enumerable accessor (a spread or `Object.keys` sees it, as a plain
 * request's) that makes the turn's signal when first read: a model that never reads it costs the turn no AbortSignal
 * (about 3 µs on Node 20, bench/README). A class with one shared getter keeps one hidden class in fast mode (an object
 * literal with a getter is ≈ 0.5 µs to make and read in dictionary mode).
 */
class StepRequest implements GenerateRequest {
  readonly #abort: { readonly signal: AbortSignal }
  declare signal: AbortSignal
  maxTokens?: number
  maxToolCalls?: number
  constructor(
    public system: string | undefined, public messages: GenerateRequest['messages'], public tools: GenerateRequest['tools'],
    abort: { readonly signal: AbortSignal }, agent: { maxTokens?: number; maxToolCallsPerStep?: number },
    public modelId: string | undefined,
  ) {
    this.#abort = abort
    Object.defineProperty(this, 'signal', SIGNAL)
    this.maxTokens = agent.maxTokens
    this.maxToolCalls = agent.maxToolCallsPerStep
  }

  static signalOf(this: StepRequest): AbortSignal { return this.#abort.signal }
}

const SIGNAL: PropertyDescriptor = { enumerable: true, configurable: true, get: StepRequest.signalOf }

// A tool call's context: the turn's abort as `abortScope` (waiting on it makes no signal), `signal` made on first read; a class,
// not a literal: V8 may make a literal site's objects old from birth (bench/README).
class ToolCall { constructor(readonly abortScope: AbortScope, readonly agent: ToolExecContext['agent'], readonly toolCallId: string) {} }
