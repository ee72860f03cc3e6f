import { setMaxListeners } from 'node:events'
import { type BudgetBreach, countOf, describeBreach, LimitError, MAX_TIMER_MS } from '@cordis-subagents/shared'
import type { ToolExecContext, ToolResult } from '@cordis-subagents/tools'
import { abortFlat } from './abort.js'
import { AgentError } from './errors.js'
import type { TurnAgent, TurnOwner, TurnWatch } from './turn-owner.js'
import type { HookRun } from './hook-run.js'
import { acceptSuspension } from './suspension.js'
import type { Budget } from './budget.js'
import { cancelled, finishDiagnostic } from './stops.js'
import type { AgentEvent, GenerateResponse, ModelToolCall, RunOptions } from './types.js'

// One step of the loop and what it runs under: the leg of the turn (its abort, listener, observers,
// wall-clock timer), the turn's limits checked before each step, what the model returned made
// well-formed, and the tool calls it asked for, run.

/**
 * A turn's abort: the signal its model and tool calls get, and the one promise the turn races them
 * against. Only the agent aborts a turn (its caller's signal, `abort()`, `dispose()`, the wall-clock
 * limit), always through `abort`, so the promise is rejected there: no listener on the turn's own
 * signal, and no promise at all for a turn that never waits on one.
 */
export class TurnAbort {
  private readonly controller = new AbortController()
  private promise?: Promise<never>
  private reject?: (reason: unknown) => void
  private listenersRaised = false

  get signal(): AbortSignal {
    return this.controller.signal
  }

  /** Rejects once the turn is aborted (at once if it already is); only ever observed through a race. */
  get aborted(): Promise<never> {
    if (!this.promise) {
      this.promise = new Promise<never>((_, reject) => {
        if (this.controller.signal.aborted) reject(this.controller.signal.reason)
        else this.reject = reject
      })
      this.promise.catch(() => {})
    }
    return this.promise
  }

  abort(reason?: unknown): void {
    abortFlat(this.controller, reason)
    // abortFlat may queue this abort behind one in progress; it is done before the outermost call
    // returns, so by the time the rejection is observed (a microtask later) the signal is aborted.
    this.reject?.(reason)
    this.reject = undefined
  }

  /**
   * Tools listen on the turn's signal (a delegating tool may start many children on it at once), so
   * before the first tool step the listener limit is lifted; a turn without tools never pays for it.
   */
  raiseListenerLimit(): void {
    if (this.listenersRaised) return
    this.listenersRaised = true
    setMaxListeners(0, this.controller.signal)
  }
}

/**
 * One call of `run`, `wake` or `resume` on a turn: its abort, its listener, its observers and its
 * wall-clock timer. A turn that parks closes its leg (no timer, no listener held while parked);
 * `resume` opens the next one.
 */
export interface Leg {
  abort: TurnAbort
  /** Undefined without an `onEvent`: `emit?.({ … })` then builds no event object at all. */
  emit?: (event: AgentEvent) => void
  /** The run's observers, when anyone observes. */
  watch?: TurnWatch
  /** The agent's hooks and metric sink, when it has either. */
  hooks?: HookRun
  /** Nothing is reported after this, the timer is disarmed and `onSpend` unwatched. */
  close(): void
}

export function openLeg(
  turn: { budget: Budget; limits: { armWallClock(abort: TurnAbort): () => void } }, owner: TurnOwner, abort: TurnAbort, options: RunOptions,
  prompt: string, resumedQuestion?: string,
): Leg {
  let ended = false
  const { onEvent, onSpend } = options
  const emit = onEvent && ((event: AgentEvent) => {
    // Nothing is reported after the leg ended (e.g. a late onUpdate from a tool that ignored the abort).
    if (ended) return
    try {
      onEvent(event)
    } catch {
      // A progress listener must never break the loop.
    }
  })
  const unwatch = onSpend && owner.ownsRootBudget ? turn.budget.watch(onSpend) : undefined
  // undefined when nobody observes: every `watch?.` is then one check, no call.
  const watch = owner.host.watch(owner.agent, prompt, resumedQuestion)
  const hooks = owner.host.hookRun(owner.agent, turn, abort)
  const disarm = turn.limits.armWallClock(abort)
  return {
    abort,
    emit,
    watch,
    hooks,
    close() {
      ended = true
      disarm()
      unwatch?.()
    },
  }
}

/** Misuse of `Agent.run` fails at the call, with what to pass instead. */
export function checkRunArguments(prompt: unknown, options: RunOptions): void {
  if (typeof prompt !== 'string') throw new AgentError('INVALID_PROMPT', 'The prompt must be a string.')
  if (options === null || typeof options !== 'object') throw new AgentError('INVALID_OPTIONS', 'run() takes an options object { signal?, onEvent?, onSpend? }.')
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new AgentError('INVALID_OPTIONS', 'options.signal must be an AbortSignal (e.g. new AbortController().signal).')
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') {
    throw new AgentError('INVALID_OPTIONS', 'options.onEvent must be a function.')
  }
  if (options.onSpend !== undefined && typeof options.onSpend !== 'function') {
    throw new AgentError('INVALID_OPTIONS', 'options.onSpend must be a function.')
  }
}

/** Which calls of a step run; the others get these readable refusals (by call index). */
export interface StepPlan {
  admitted: number
  refusals: Map<number, string>
  /** Set when calls were refused because the tool-call budget is spent: the limit, its value and the spend. */
  refusedFor?: BudgetBreach
}

/**
 * The limits of one turn: the budget checks that give the operator's handlers a chance to extend
 * (`onBreach`), the fan-out cap of a step, and the wall-time timer.
 */
export class TurnLimits {
  constructor(
    private readonly budget: Budget,
    private readonly maxToolCallsPerStep: number,
    private readonly onBreach: (breach: BudgetBreach) => boolean,
  ) {}

  /** A breach a handler asked to suspend at (`BudgetEvent.suspend()`); the loop parks at its next step boundary. */
  private suspendFor?: BudgetBreach

  /** The breach to park at, if a handler asked to suspend; cleared. */
  takeSuspension(): BudgetBreach | undefined {
    const breach = this.suspendFor
    this.suspendFor = undefined
    return breach
  }

  /**
   * Decides which calls of a step run: no more than the tool-call budget allows (the response was
   * already cut to `maxToolCallsPerStep`, see `droppedCallsNote`). The others are answered with an
   * error the model can read; the step is not dropped.
   */
  admit(calls: readonly ModelToolCall[]): StepPlan {
    const { budget } = this
    const refusals = new Map<number, string>()
    let admitted = 0
    let spent: string | undefined
    let refusedFor: BudgetBreach | undefined
    for (let i = 0; i < calls.length; i++) {
      // Once the budget is spent in this step it stays spent: the handlers are asked once.
      const breach = spent === undefined ? this.reached(() => budget.check('toolCalls')) : undefined
      if (breach) {
        refusedFor = breach
        spent = `Not run: ${describeBreach(breach)} is spent. Answer with what you have.`
      }
      if (spent !== undefined) {
        refusals.set(i, spent)
        continue
      }
      budget.charge('toolCalls', 1)
      admitted++
    }
    return refusedFor ? { admitted, refusals, refusedFor } : { admitted, refusals }
  }

  /** A breach, after the operator's handlers had their chance to extend the budget; undefined when none is left. */
  reached(find: () => BudgetBreach | undefined): BudgetBreach | undefined {
    const breach = find()
    if (!breach) return undefined
    const suspend = this.onBreach(breach)
    const after = find()
    if (after && suspend) this.suspendFor ??= after
    return after
  }

  /** One timer per run, only where this run's wall-time limit is tighter than its parent's (which has its own). */
  armWallClock(abort: TurnAbort): () => void {
    const { budget } = this
    // A run without a wall-time limit of its own is stopped by the timer of the run that holds it.
    if (!budget.holdsWallTime) return () => {}
    let timer: NodeJS.Timeout
    const arm = () => {
      // Node fires a longer delay at once; a far deadline is re-armed when this one fires.
      timer = setTimeout(fire, Math.max(0, Math.min(budget.deadline - Date.now(), MAX_TIMER_MS)))
    }
    const fire = () => {
      const breach = this.reached(() => budget.overtime())
      if (!breach) return arm()
      // A handler asked to suspend: the step in flight finishes, and the turn parks before the next.
      if (this.suspendFor) return
      abort.abort(new LimitError('BUDGET_EXCEEDED', `Stopped by ${describeBreach(breach)}.`, breach))
    }
    arm()
    return () => clearTimeout(timer)
  }
}

const FINISH_REASONS = new Set<string>(['stop', 'tool-calls', 'length', 'refusal', 'error', 'other'])

/**
 * `maxCalls`: the most tool calls kept; the others (and those the adapter already dropped) are
 * only counted in `droppedToolCalls`, so a response with 200,000 calls costs what one with
 * `maxCalls` costs.
 */
export function normalizeResponse(response: GenerateResponse, idPrefix: string, maxCalls: number): GenerateResponse {
  if (!response || typeof response !== 'object') throw new Error('the model returned no response')
  const calls: unknown[] = Array.isArray(response.toolCalls) ? response.toolCalls : []
  const toolCalls = normalizeCalls(calls, idPrefix, maxCalls)
  const dropped = calls.length - toolCalls.length + countOf(response.droppedToolCalls)
  const raw: unknown = response.finishReason
  // A plain copy, then assignment: V8 builds `{ ...response, text, toolCalls }` on a slow path (bench/README.md).
  const normalized = { ...response }
  normalized.text = typeof response.text === 'string' ? response.text : ''
  normalized.toolCalls = toolCalls
  if (dropped) normalized.droppedToolCalls = dropped
  else if (normalized.droppedToolCalls !== undefined) delete normalized.droppedToolCalls
  if (raw === undefined || raw === null) {
    normalized.finishReason = toolCalls.length ? 'tool-calls' : 'stop'
  } else if (!FINISH_REASONS.has(raw as string)) {
    // An adapter bug must not pass for success: an unknown reason is an `error` stop.
    normalized.finishReason = 'other'
    normalized.diagnostic ??= finishDiagnostic(String(raw) as GenerateResponse['finishReason'])
  }
  return normalized
}

/**
 * Every call gets a unique string id and a name, so each can be answered and the transcript stays
 * balanced; a malformed entry from an adapter becomes a call answered with an error, not a crash.
 */
function normalizeCalls(calls: unknown[], idPrefix: string, maxCalls: number): ModelToolCall[] {
  const ids = new Set<string>()
  const kept = calls.length > maxCalls ? calls.slice(0, maxCalls) : calls
  return kept.map((raw, index) => {
    const call = (raw && typeof raw === 'object' ? raw : {}) as Partial<ModelToolCall>
    const base = typeof call.id === 'string' && call.id ? call.id : `${idPrefix}-${index}`
    let id = base
    for (let n = index; ids.has(id); n++) id = `${base}-${n}`
    ids.add(id)
    if (typeof call.name === 'string' && call.name && raw === call) {
      return id === call.id ? call as ModelToolCall : { ...call as ModelToolCall, id }
    }
    return {
      id,
      name: typeof call.name === 'string' && call.name ? call.name : '(unnamed)',
      input: call.input,
      invalidInput: 'the model sent a malformed tool call (it needs a tool name).',
    }
  })
}

/** One step's tool calls, as the agent's loop hands them over. */
export interface ToolStep {
  agent: TurnAgent
  calls: ModelToolCall[]
  /** Calls refused before they run (by index), with the text the model reads. */
  refusals: Map<number, string>
  step: number
  signal: AbortSignal
  /** Rejects when the turn is aborted: a tool that ignores its signal does not hold the turn. */
  aborted: Promise<never>
  emit: ((event: AgentEvent) => void) | undefined
  /** The run's observers, when anyone observes. */
  watch?: TurnWatch
  /** The agent's hooks and metric sink, when it has either. */
  hooks: HookRun | undefined
  /** Remembers work that may outlive an aborted turn, so the agent's `dispose` can wait for it. */
  track<T>(work: Promise<T>): Promise<T>
}

/** Runs every call of a step concurrently; results come back in call order. */
export function runToolCalls(toolStep: ToolStep): Promise<ToolResult[]> {
  const { agent, calls, refusals, step, signal, aborted, emit, watch, hooks, track } = toolStep
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
    if (refusal !== undefined) {
      result = { isError: true, content: refusal }
    } else if (call.invalidInput !== undefined) {
      result = { isError: true, content: `Invalid arguments for tool "${call.name}": ${call.invalidInput}` }
    } else {
      // A tool gets an update sink only when someone listens to this turn (`onUpdate` is optional).
      const exec: ToolExecContext = { signal, agent, toolCallId: call.id }
      if (emit) exec.onUpdate = (update) => emit({ type: 'tool-update', step, toolCallId: call.id, name: call.name, update })
      const pending = agent.tools.execute({ id: call.id, name: call.name, input: call.input }, exec)
      result = checkSuspended(call, await Promise.race([track(pending), aborted]).catch(cancelled))
    }
    watch?.toolEnd(step, call, result)
    if (hooks) await hooks.afterTool(step, call, result, began, refusal !== undefined)
    emit?.({ type: 'tool-result', step, toolCallId: call.id, name: call.name, result })
    return result
  }))
}

/**
 * A result that suspends, as the turn may park on it (its question capped, its state a JSON copy),
 * or an error result naming what makes the suspension unusable. Any other result as it is.
 */
export function checkSuspended(call: ModelToolCall, result: ToolResult): ToolResult {
  if (result.suspend === undefined) return result
  const accepted = acceptSuspension(result.suspend)
  if ('problem' in accepted) return { isError: true, content: `Tool "${call.name}" asked a question that cannot be parked: ${accepted.problem}.` }
  return { ...result, suspend: accepted }
}
