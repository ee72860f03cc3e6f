import { countOf } from '@cordis-subagents/shared'
import type { GenerateResponse, ModelToolCall } from './types.js'

// What a model returned, made well-formed before the loop acts on it.

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
