import { type BudgetBreach, countOf, describeBreach, LimitError, MAX_TIMER_MS } from '@cordis-subagents/shared'
import type { ToolExecContext, ToolResult } from '@cordis-subagents/tools'
import type { GateTarget, TurnAgent, TurnWatch } from './turn-owner.js'
import type { HookRun } from './hook-run.js'
import { acceptSuspension } from './suspension.js'
import type { Endpoint } from './endpoint.js'
import type { TurnAbort } from './turn-leg.js'
import type { Budget } from './budget.js'
import type { AgentEvent, GenerateRequest, GenerateResponse, ModelToolCall } from './types.js'

// One step of the loop: the turn's limits checked before it, the model call through the gate
// (counted per endpoint), what the model returned made well-formed, and the tool calls it asked for, run.

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

  /**
   * The one message that answers every call past `maxToolCallsPerStep`: those calls were dropped
   * from the step (not kept in the transcript, not run), so they cost O(1) however many there were.
   */
  droppedCallsNote(kept: number, dropped: number): string {
    const cap = this.maxToolCallsPerStep
    return `Not run: your last step asked for ${kept + dropped} tool calls and at most ${cap} run per step `
      + `(maxToolCallsPerStep). The first ${kept} were kept (their results are above); the other ${dropped} were dropped `
      + `without running and are not in the conversation. Ask again for the ones you still need, at most ${cap} per step.`
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

/**
 * The model gate's count of calls in flight per endpoint, and the one path most model calls take
 * through it: with no cap configured and the shared backoff on, a call to an endpoint never
 * refused (or recovered) is only counted. Caps, an endpoint's backoff state and a refusal are
 * the gate's own (`ModelGate`, model-gate.ts: `gated`, `failed`).
 */
export abstract class CountedGate {
  /** Endpoints under backoff (refused, and not yet recovered). */
  protected readonly endpoints = new Map<string, Endpoint>()
  /** Calls in flight per endpoint with no state here. */
  protected readonly unlimited = new Map<string, number>()
  /** No cap is configured and the backoff is on: a call to an endpoint with no state is only counted. */
  protected countOnly = false

  /** One model call through the gate (see `ModelGate.gated`). */
  async generate(target: GateTarget, request: GenerateRequest): Promise<GenerateResponse> {
    const { signal } = request
    if (signal.aborted) throw signal.reason
    if (!this.countOnly) return this.gated(target, request)
    const key = this.keyOf(target)
    if (this.endpoints.has(key)) return this.gated(target, request, key)
    // The request is the turn's own, made for this call: marked in place (a spread copy takes V8's slow path).
    request.rateLimits = 'gate'
    this.unlimited.set(key, (this.unlimited.get(key) ?? 0) + 1)
    let response: GenerateResponse
    try {
      response = await target.model.generate(request)
    } catch (error) {
      return this.failed(target, request, key, error, performance.now())
    }
    // An endpoint made meanwhile (another call was refused) took this call over, at epoch 0.
    this.endpoints.get(key)?.succeeded(0)
    this.leave(key, undefined)
    return response
  }

  protected keyOf(target: GateTarget): string {
    return target.model.rateLimitKey?.(target.modelId) ?? (target.modelId ? `${target.name}:${target.modelId}` : target.name)
  }

  protected abstract gated(target: GateTarget, request: GenerateRequest, key?: string): Promise<GenerateResponse>

  protected abstract failed(
    target: GateTarget, request: GenerateRequest, key: string, error: unknown, failedAt: number,
  ): Promise<GenerateResponse>

  /**
   * A call to `key` ends its attempt: its slot of the endpoint it held goes back, or, when it went
   * through unlimited, of the endpoint made meanwhile, else its count. An endpoint with nothing
   * left to remember is dropped (the next call goes through unlimited again).
   */
  protected leave(key: string, held: Endpoint | undefined): void {
    const endpoint = held ?? this.endpoints.get(key)
    if (endpoint) {
      endpoint.free()
      if (endpoint.idle && this.endpoints.get(key) === endpoint) this.endpoints.delete(key)
      return
    }
    const left = this.unlimited.get(key)! - 1
    if (left) this.unlimited.set(key, left)
    else this.unlimited.delete(key)
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

export function finishDiagnostic(reason: GenerateResponse['finishReason']): string {
  switch (reason) {
    case 'length': return 'The model hit its output token limit before finishing.'
    case 'refusal': return 'The model refused to answer.'
    case 'error': return 'The model reported an error.'
    default: return `The model stopped for an unrecognised reason ("${reason}").`
  }
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

export function cancelled(): ToolResult {
  return { isError: true, content: 'Cancelled: the run was aborted before this tool call finished.' }
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
