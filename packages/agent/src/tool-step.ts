import type { ToolExecContext, ToolResult } from '@cordis-subagents/tools'
import type { TurnAgent, TurnWatch } from './turn-owner.js'
import { acceptSuspension } from './suspension.js'
import type { AgentEvent, ModelToolCall } from './types.js'

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
  /** Remembers work that may outlive an aborted turn, so the agent's `dispose` can wait for it. */
  track<T>(work: Promise<T>): Promise<T>
}

/** Runs every call of a step concurrently; results come back in call order. */
export function runToolCalls({ agent, calls, refusals, step, signal, aborted, emit, watch, track }: ToolStep): Promise<ToolResult[]> {
  return Promise.all(calls.map(async (call, index) => {
    emit?.({ type: 'tool-call', step, call })
    watch?.toolStart(step, call)
    let result: ToolResult
    const refusal = refusals.get(index)
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
