import type { ModelToolCall } from '@cordis-subagents/agent'

// The parts of a child's transcript beside its texts, as the continuable book sizes them (after-run.ts `runObserver`,
// `MAX_CONTINUABLE_BYTES`): entered only for a model response with tool calls or a tool result with images (a plain
// delegation's child has neither).

/** Most values of one tool call's input read; the rest of a larger input counts as `UNREAD_INPUT`. */
const MAX_INPUT_VALUES = 256
const UNREAD_INPUT = 8192

/** A model response's tool calls: 64 each, and their names and inputs. */
export function callsSize(calls: readonly ModelToolCall[]): number {
  let size = 0
  for (const call of calls) size += 64 + call.name.length + inputSize(call.input)
  return size
}

/** A tool result's images: 64 each, and their data (base64 text). */
export function imagesSize(images: readonly { data: string }[]): number {
  let size = 0
  for (const image of images) size += 64 + (typeof image.data === 'string' ? image.data.length : 0)
  return size
}

let valuesLeft = 0

/**
 * A tool call's input (what the model sent, JSON its adapter parsed): its strings' lengths and 8 per other value, read until
 * `MAX_INPUT_VALUES` values were. An array is read by index; an object's keys are listed by the engine first (as many as sent).
 */
function inputSize(input: unknown): number {
  valuesLeft = MAX_INPUT_VALUES
  return valueSize(input)
}

function valueSize(value: unknown): number {
  if (typeof value === 'string') return value.length
  if (typeof value !== 'object' || value === null) return 8
  let size = 16
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (--valuesLeft < 0) return size + UNREAD_INPUT
      size += valueSize(value[i])
    }
    return size
  }
  for (const key in value) {
    if (--valuesLeft < 0) return size + UNREAD_INPUT
    size += key.length + valueSize((value as Record<string, unknown>)[key])
  }
  return size
}
