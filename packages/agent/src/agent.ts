import { type ToolView } from '@cordis-subagents/tools'
import { addUsage, addWork, type BudgetBreach, describeBreach, describeError, emptyUsage, emptyWork, LimitError, limitStop, totalTokens } from '@cordis-subagents/shared'
import { TurnAbort } from './turn-abort.js'
import { Budget, type BudgetLimits } from './budget.js'
import { TurnLimits } from './turn-limits.js'
import { AgentError, checkRunArguments } from './errors.js'
import { finishDiagnostic, normalizeResponse } from './response.js'
import { abortDiagnostic, budgetDiagnostic, FINISH_STOPS, limitDiagnostic, policyDiagnostic } from './stops.js'
import { Transcript } from './transcript.js'
import { runToolCalls } from './tool-step.js'
import { usageTally, workTally } from './tallies.js'
import { Inbox, type InboxDelegation } from './inbox.js'
import type { AgentHost, AgentInit } from './agent-init.js'
import type {
  AgentEvent, AgentUsage, AgentWork, GenerateResponse, RunOptions, RunResult, StopReason,
} from './types.js'

export type { AgentHost, AgentInit } from './agent-init.js'

export class Agent {
  readonly id: string
  readonly parent?: Agent
  readonly depth: number
  readonly cwd: string
  readonly persona?: string
  /** Model ref (`name` or `name:modelId`); undefined means the runtime's default. */
  readonly model?: string
  readonly tools: ToolView
  readonly transcript: Transcript
  readonly maxSteps: number
  readonly maxTokens?: number
  readonly label?: string
  readonly usage: AgentUsage
  /** Model calls, tool calls and delegations of every run so far: own, delegated, total. */
  readonly work: AgentWork
  readonly maxToolCallsPerStep: number
  /**
   * The budget this agent spends from: a child's is carved from its parent's when it is created;
   * a root agent gets a fresh one for every run (a tree's limits are per root run).
   */
  budget: Budget
  /** Messages for this agent's next model call, and holds that keep its turn from ending (see `Inbox`). */
  readonly inbox: Inbox
  private readonly budgetLimits?: BudgetLimits
  private readonly ownsRootBudget: boolean

  private current?: { abort: TurnAbort; done: Promise<unknown> }
  private readonly inFlight = new Set<Promise<unknown>>()
  private disposal?: Promise<void>

  constructor(private readonly host: AgentHost, init: AgentInit) {
    this.id = init.id
    this.parent = init.parent
    this.depth = init.depth
    this.cwd = init.cwd
    this.persona = init.persona
    this.model = init.model
    this.tools = init.tools
    this.transcript = new Transcript(init.seed)
    this.inbox = new Inbox(init.id)
    this.maxSteps = init.maxSteps
    this.maxTokens = init.maxTokens
    this.label = init.label
    this.maxToolCallsPerStep = init.maxToolCallsPerStep
    this.budgetLimits = init.budgetLimits
    this.ownsRootBudget = !init.budget && !init.parent
    this.budget = init.budget ?? (init.parent ? init.parent.budget.child(init.budgetLimits) : Budget.root(init.budgetLimits))
    this.budget.adopt()
    this.usage = usageTally()
    this.work = workTally()
  }

  get running(): boolean {
    return !!this.current
  }

  get disposed(): boolean {
    return !!this.disposal
  }

  /**
   * Runs one turn. Rejects only for misuse (`BUSY`, `DISPOSED`, `INVALID_PROMPT`, `INVALID_OPTIONS`);
   * model and tool failures end in a stop reason.
   */
  async run(prompt: string, options: RunOptions = {}): Promise<RunResult> {
    if (this.disposal) throw new AgentError('DISPOSED', `Agent ${this.id} has been disposed; create a new agent.`)
    if (this.current) throw new AgentError('BUSY', `Agent ${this.id} is already running a turn; wait for it or abort it first.`)
    checkRunArguments(prompt, options)
    const abort = new TurnAbort()
    const onAbort = () => abort.abort(options.signal?.reason)
    if (options.signal?.aborted) abort.abort(options.signal.reason)
    else options.signal?.addEventListener('abort', onAbort, { once: true })
    // Mark the agent busy before the turn starts: the turn runs synchronously up to its first
    // await (events, the model call), and a run started from there must see BUSY.
    const current: { abort: TurnAbort; done: Promise<unknown> } = { abort, done: Promise.resolve() }
    this.current = current
    try {
      const done = this.turn(prompt, abort, options.onEvent, options.onSpend)
      current.done = done
      return await done
    } finally {
      options.signal?.removeEventListener('abort', onAbort)
      this.current = undefined
    }
  }

  /** Aborts the running turn, if any; it ends `aborted` with `reason` in its diagnostic. */
  abort(reason?: unknown): void {
    this.current?.abort.abort(reason)
  }

  /** Aborts a running turn, then waits for it and for any tool still settling. Idempotent. */
  dispose(): Promise<void> {
    this.disposal ??= (async () => {
      this.inbox.close()
      const current = this.current
      if (current) {
        current.abort.abort(new AgentError('DISPOSED', `Agent ${this.id} was disposed.`))
        await current.done.catch(() => {})
      }
      while (this.inFlight.size) await Promise.allSettled([...this.inFlight])
    })()
    return this.disposal
  }

  private async turn(
    prompt: string, abort: TurnAbort, onEvent?: (event: AgentEvent) => void, onSpend?: RunOptions['onSpend'],
  ): Promise<RunResult> {
    const { signal } = abort
    let ended = false
    // Without a listener there is no emitter, and `emit?.({ … })` builds no event object at all.
    const emit = onEvent && ((event: AgentEvent) => {
      // Nothing is reported after the turn ended (e.g. a late onUpdate from a tool that ignored the abort).
      if (ended) return
      try {
        onEvent(event)
      } catch {
        // A progress listener must never break the loop.
      }
    })
    if (this.ownsRootBudget) {
      this.budget = Budget.root(this.budgetLimits)
      this.budget.adopt()
    }
    const budget = this.budget
    const unwatch = onSpend && this.ownsRootBudget ? budget.watch(onSpend) : undefined
    // undefined when nobody observes: every `watch?.` below is then one check, no call.
    const watch = this.host.observers.watch(this, prompt)
    const state = {
      text: '', steps: 0, toolCalls: 0, own: emptyUsage(), delegated: emptyUsage(),
      ownWork: emptyWork(), delegatedWork: emptyWork(),
    }
    const limits = new TurnLimits(budget, this.maxToolCallsPerStep, (breach) => this.host.budgetReached(this, breach))
    const disarm = limits.armWallClock(abort)
    const finish = (stopReason: StopReason, diagnostic?: string, breach?: BudgetBreach): RunResult => {
      ended = true
      disarm()
      unwatch?.()
      this.transcript.endTurn()
      state.ownWork = { steps: state.steps, toolCalls: state.toolCalls, delegations: state.ownWork.delegations }
      this.work.own = addWork(this.work.own, { steps: state.steps, toolCalls: state.toolCalls })
      const result: RunResult = {
        text: state.text,
        stopReason,
        usage: addUsage(state.own, state.delegated),
        steps: state.steps,
        toolCalls: state.toolCalls,
        work: { own: state.ownWork, delegated: state.delegatedWork },
      }
      if (diagnostic) result.diagnostic = diagnostic
      if (breach) result.budget = breach
      watch?.end(result)
      return result
    }
    const stopForBudget = (breach: BudgetBreach) => finish('budget', budgetDiagnostic(breach), breach)
    const stopForAbort = () => {
      const limit = limitStop(signal.reason)
      if (!limit) return finish('aborted', abortDiagnostic(signal))
      const breach = (signal.reason as LimitError).breach
      return finish(limit, limitDiagnostic(signal.reason as LimitError), breach)
    }

    /** A delegation's usage and work (a tool result, or a background child's result read from the inbox). */
    const rollUp = (result: InboxDelegation) => {
      state.delegated = addUsage(state.delegated, result.usage)
      this.usage.delegated = addUsage(this.usage.delegated, result.usage)
      if (!result.work) return
      state.ownWork.delegations++
      this.work.own.delegations++
      state.delegatedWork = addWork(state.delegatedWork, result.work)
      this.work.delegated = addWork(this.work.delegated, result.work)
    }

    this.transcript.beginTurn()
    this.transcript.push({ role: 'user', content: prompt })
    if (signal.aborted) return stopForAbort()
    const resolved = this.host.resolveModel(this.model)
    if ('error' in resolved) return finish('error', resolved.error)
    /**
     * Set once tool calls were refused for the tool-call budget: the model gets one last step,
     * without tools, and its answer ends the run as `budget` (the work behind it is incomplete).
     */
    let refusedFor: BudgetBreach | undefined
    const complete = () => (refusedFor ? stopForBudget(refusedFor) : finish('completed'))

    while (true) {
      if (signal.aborted) return stopForAbort()
      if (state.steps >= this.maxSteps) {
        return finish('max-steps', `Stopped after ${this.maxSteps} steps without a final answer (the step limit).`)
      }
      const before = limits.reached(() => budget.overtime() ?? budget.check('steps') ?? budget.check('tokens'))
      if (before) return stopForBudget(before)
      if (this.host.continueHooks.size) {
        const reason = this.host.continueHooks.ask(this, state.steps + 1)
        if (reason !== undefined) return finish('budget', policyDiagnostic(reason, state.steps + 1))
      }
      const step = ++state.steps
      budget.charge('steps', 1)
      emit?.({ type: 'step-start', step })
      for (const { content, delegation } of this.inbox.take()) {
        this.transcript.push({ role: 'user', content })
        if (delegation) rollUp(delegation)
        emit?.({ type: 'message', step, content })
      }

      // The gate wraps the model call only: its slot is held until the call settles, never across tools.
      let release: (() => void) | undefined
      const gate = this.host.modelGate
      if (gate) {
        try {
          release = await gate.acquire(resolved.name, signal)
        } catch (error) {
          if (signal.aborted) return stopForAbort()
          return finish('error', describeError(error))
        }
        if (signal.aborted) {
          release()
          return stopForAbort()
        }
      }

      let response: GenerateResponse
      try {
        watch?.modelStart(step, this.model)
        const generation = this.track(resolved.model.generate({
          system: this.persona,
          messages: this.transcript.snapshot(),
          tools: refusedFor ? [] : this.tools.list(),
          signal,
          maxTokens: this.maxTokens,
          modelId: resolved.modelId,
          maxToolCalls: this.maxToolCallsPerStep,
        }))
        if (release) {
          generation.then(release, release)
          release = undefined
        }
        response = normalizeResponse(await Promise.race([generation, abort.aborted]), `${this.id}-${step}`, this.maxToolCallsPerStep)
      } catch (error) {
        release?.() // generate() threw before returning a promise: no call holds the slot
        watch?.modelEnd(step, undefined, error, signal.aborted)
        if (signal.aborted) return stopForAbort()
        return finish('error', `The model "${this.model ?? 'default'}" failed: ${describeError(error)}`)
      }

      watch?.modelEnd(step, response)
      state.own = addUsage(state.own, response.usage)
      this.usage.own = addUsage(this.usage.own, response.usage)
      if (response.usage) budget.charge('tokens', totalTokens(response.usage))
      if (response.text.trim()) {
        state.text = response.text
        emit?.({ type: 'text', step, text: response.text })
      }
      const calls = response.toolCalls
      this.transcript.push(calls.length
        ? { role: 'assistant', content: response.text, toolCalls: calls }
        : { role: 'assistant', content: response.text })
      emit?.({ type: 'step-end', step, finishReason: response.finishReason, usage: response.usage })
      // Calls past maxToolCallsPerStep were cut from the response: one note answers them all, after the kept calls' results.
      const noteDropped = () => {
        if (response.droppedToolCalls) this.transcript.push({ role: 'user', content: limits.droppedCallsNote(calls.length, response.droppedToolCalls) })
      }

      const failure = FINISH_STOPS[response.finishReason]
      if (failure) {
        const diagnostic = response.diagnostic ?? finishDiagnostic(response.finishReason)
        this.transcript.balance(`Not run: the model's response ended with "${response.finishReason}".`)
        noteDropped()
        return finish(failure, diagnostic)
      }
      if (!calls.length) {
        // Messages that arrived meanwhile get one more step, open holds are waited for first; with
        // no step left the answer stands and the messages wait for the next turn.
        if (state.steps >= this.maxSteps) return complete()
        while (!this.inbox.size && this.inbox.held) {
          emit?.({ type: 'waiting', step, holds: this.inbox.held })
          try {
            await Promise.race([this.inbox.changed(), abort.aborted])
          } catch {
            return stopForAbort()
          }
        }
        if (signal.aborted) return stopForAbort()
        if (!this.inbox.size) return complete()
        continue
      }
      if (refusedFor) {
        // It was told its tool budget is spent and still asks for tools: stop here, loudly.
        const breach = budget.check('toolCalls') ?? refusedFor
        this.transcript.balance(`Not run: ${describeBreach(breach)} is spent.`)
        noteDropped()
        return stopForBudget(breach)
      }

      const plan = limits.admit(calls)
      if (plan.refusedFor) refusedFor = plan.refusedFor
      state.toolCalls += plan.admitted
      abort.raiseListenerLimit()
      const results = await runToolCalls({
        agent: this, calls, refusals: plan.refusals, step, signal, aborted: abort.aborted, emit, watch, track: (work) => this.track(work),
      })
      results.forEach((result, i) => {
        const call = calls[i]
        rollUp(result)
        this.transcript.push({
          role: 'tool',
          toolCallId: call.id,
          name: call.name,
          content: result.content,
          ...(result.isError ? { isError: true } : {}),
        })
      })
      noteDropped()
    }
  }

  /** Remembers work that may outlive an aborted turn, so `dispose` can wait for it. */
  private track<T>(work: T | Promise<T>): Promise<T> {
    // A model that returns a plain object instead of a promise still works and is still tracked.
    const pending = Promise.resolve(work)
    this.inFlight.add(pending)
    pending.then(() => this.inFlight.delete(pending), () => this.inFlight.delete(pending))
    return pending
  }
}
