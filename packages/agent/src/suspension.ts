import { checkedQuestion, utf8Length } from '@cordis-subagents/shared'
import type { ToolResult, ToolSuspension } from '@cordis-subagents/tools'
import type { ModelToolCall } from './types.js'

/** Largest `ToolSuspension.state`, as JSON in UTF-8 bytes: it is checkpointed with the parked turn. */
export const MAX_SUSPENSION_STATE_BYTES = 4096

/**
 * What a parked turn keeps of a tool's suspension: the question (its text capped at
 * `MAX_QUESTION_LENGTH` characters with a marker) and a JSON copy of `state`; or the problem that
 * makes it unusable (the call is then answered with an error result naming it, and never parks).
 */
export function acceptSuspension(suspension: unknown): ToolSuspension | { problem: string } {
  if (!suspension || typeof suspension !== 'object') return { problem: 'suspend must be an object { question, state? }' }
  const { question, state } = suspension as ToolSuspension
  const checked = checkedQuestion(question)
  if (typeof checked === 'string') return { problem: checked }
  if (state === undefined) return { question: checked }
  let json: string | undefined
  try {
    json = JSON.stringify(state)
  } catch {
    json = undefined
  }
  if (json === undefined) return { problem: 'suspend.state is not JSON-serialisable (it is checkpointed with the parked turn)' }
  const bytes = utf8Length(json)
  if (bytes > MAX_SUSPENSION_STATE_BYTES) {
    return { problem: `suspend.state is ${bytes} bytes as JSON; at most ${MAX_SUSPENSION_STATE_BYTES} are kept (store a key, such as a run id, instead)` }
  }
  return { question: checked, state: JSON.parse(json) }
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
