import { countOf } from '@cordis-subagents/shared'
import type { ToolExecContext, ToolResult } from '@cordis-subagents/tools'
import type { TurnAgent, TurnWatch } from './turn-owner.js'
import type { HookRun } from './hook-run.js'
import { acceptSuspension } from './suspension.js'
import type { AgentEvent, GenerateResponse, ModelToolCall } from './types.js'

// One step of the loop: what the model returned, made well-formed, and the tool calls it asked for, run.

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
