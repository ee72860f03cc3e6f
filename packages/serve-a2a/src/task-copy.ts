import type { Task } from '@a2a-js/sdk'

/**
 * Deepest level copied here; a deeper part (only what a client sends, such as metadata, nests that far) goes
 * through `structuredClone`, so the copy never recurses further than this whatever a body holds.
 */
const MAX_DEPTH = 32

/** Bytes a JSON number, boolean or null takes at most (`-1.7976931348623157e+308` is 24). */
const SCALAR_BYTES = 32

/** Where `copyTask` adds up its bound of the history's size as JSON. */
export interface HistoryBound {
  bytes: number
}

/**
 * A deep copy of a task, as `structuredClone` makes it (plain objects and arrays copied, `undefined` fields kept,
 * bytes as a new `Uint8Array`, anything else through `structuredClone`), several times faster for the small,
 * plain objects tasks are: the in-memory store copies a task on every load and save, and the SDK loads and saves
 * it once per event. With `bound`, it also adds an upper bound of the history's size as stored JSON: each UTF-16
 * unit of a string at most 6 bytes (`\uXXXX`), a byte at most 16 (as base64, or as the JSON of a Buffer or of a
 * bare `Uint8Array`'s indexed object), a scalar at most 32, plus the punctuation; Infinity for anything it cannot
 * bound. A history under its byte limit by this bound needs no exact measure.
 */
export function copyTask(task: Task, bound?: HistoryBound): Task {
  const out: Record<string, unknown> = {}
  const source = task as unknown as Record<string, unknown>
  for (const key of Object.keys(source)) out[key] = copy(source[key], 1, key === 'history' ? bound : undefined)
  return out as unknown as Task
}

function copy(value: unknown, depth: number, bound: HistoryBound | undefined): unknown {
  if (typeof value === 'string') {
    if (bound) bound.bytes += 2 + 6 * value.length
    return value
  }
  if (typeof value !== 'object' || value === null) {
    if (bound) bound.bytes += SCALAR_BYTES
    return value
  }
  if (value instanceof Uint8Array) {
    if (bound) bound.bytes += 64 + 16 * value.length
    return new Uint8Array(value)
  }
  const prototype = Object.getPrototypeOf(value)
  if (depth >= MAX_DEPTH || (!Array.isArray(value) && prototype !== Object.prototype && prototype !== null)) {
    if (bound) bound.bytes = Infinity
    return structuredClone(value)
  }
  if (bound) bound.bytes += 2
  if (Array.isArray(value)) {
    const items = new Array<unknown>(value.length)
    for (let i = 0; i < value.length; i++) {
      if (bound) bound.bytes += 1
      items[i] = copy(value[i], depth + 1, bound)
    }
    return items
  }
  const out: Record<string, unknown> = {}
  const record = value as Record<string, unknown>
  for (const key of Object.keys(record)) {
    if (bound) bound.bytes += 4 + 6 * key.length
    out[key] = copy(record[key], depth + 1, bound)
  }
  return out
}
