import type { Message } from './types.js'

/**
 * Shared, append-only message storage. A transcript owns one append-only array and may start from
 * the completed part of another transcript's storage. Since nothing is ever removed or replaced,
 * "the first `n` messages of these arrays" is a stable snapshot: reading it later gives the same
 * messages. A fork child keeps such a snapshot of its parent instead of copying the history, and a
 * model request gets one instead of a copy of the transcript: both cost O(1), whatever the length.
 */

/** The first `end` entries of `items` (an append-only array), at absolute offset `start`. */
export interface Segment {
  readonly items: readonly Message[]
  readonly start: number
  readonly end: number
}

/** A snapshot made of more segments than this is flattened once, so a lookup never walks a long chain. */
const MAX_SEGMENTS = 8

/** Proxy handler of a read-only array view over segments; one per view, holding its segments. */
class ViewHandler implements ProxyHandler<Message[]> {
  constructor(readonly segments: readonly Segment[], readonly length: number) {}

  at(index: number): Message | undefined {
    const segments = this.segments
    // The last segment is the common target (the newest messages); walk backwards.
    for (let s = segments.length - 1; s >= 0; s--) {
      const segment = segments[s]
      if (index >= segment.start) return segment.items[index - segment.start]
    }
    return undefined
  }

  get(target: Message[], key: string | symbol, receiver: unknown): unknown {
    if (typeof key === 'string') {
      if (key === 'length') return this.length
      const index = arrayIndex(key)
      if (index >= 0) return index < this.length ? this.at(index) : undefined
    }
    return Reflect.get(target, key, receiver)
  }

  has(target: Message[], key: string | symbol): boolean {
    if (typeof key === 'string') {
      const index = arrayIndex(key)
      if (index >= 0) return index < this.length
    }
    return Reflect.has(target, key)
  }

  ownKeys(): Array<string | symbol> {
    const keys: string[] = []
    for (let i = 0; i < this.length; i++) keys.push(String(i))
    keys.push('length')
    return keys
  }

  getOwnPropertyDescriptor(target: Message[], key: string | symbol): PropertyDescriptor | undefined {
    if (key === 'length') return { value: this.length, writable: true, enumerable: false, configurable: false }
    if (typeof key === 'string') {
      const index = arrayIndex(key)
      if (index >= 0) {
        return index < this.length ? { value: this.at(index), writable: false, enumerable: true, configurable: true } : undefined
      }
    }
    return Reflect.getOwnPropertyDescriptor(target, key)
  }

  set(): boolean {
    return false
  }

  defineProperty(): boolean {
    return false
  }

  deleteProperty(): boolean {
    return false
  }
}

const views = new WeakMap<object, ViewHandler>()

/**
 * A read-only array of the first `length` messages of `segments`. It behaves as an array for
 * readers (index, length, iteration, `map`, `slice`, JSON), refuses writes (a TypeError in strict
 * code), and never changes: later appends to the underlying storage are beyond its length.
 */
export function historyView(segments: readonly Segment[], length: number, seed = false): readonly Message[] {
  const handler = new ViewHandler(segments, length)
  const view = new Proxy<Message[]>([], handler)
  // Only a seed must be recognised later (to share it); a model request's view is not registered.
  if (seed) views.set(view, handler)
  return view
}

/** The first `length` messages of `segments` as a plain array (for short histories, where a copy is cheaper than a view). */
export function copyOf(segments: readonly Segment[], length: number): Message[] {
  const copy = new Array<Message>(length)
  for (const segment of segments) {
    const end = Math.min(segment.end, length)
    for (let i = segment.start; i < end; i++) copy[i] = segment.items[i - segment.start]
  }
  return copy
}

/** The segments behind a seed view made by `historyView` (shared, never copied), or undefined for any other array. */
export function segmentsOf(value: unknown): { segments: readonly Segment[]; length: number } | undefined {
  if (!value || typeof value !== 'object') return undefined
  const handler = views.get(value)
  return handler && { segments: handler.segments, length: handler.length }
}

/** The first `length` messages of `segments`, as segments (shared), flattened into one array when the chain grew long. */
export function cut(segments: readonly Segment[], length: number): Segment[] {
  const kept: Segment[] = []
  for (const segment of segments) {
    if (segment.start >= length) break
    kept.push(segment.end <= length ? segment : { items: segment.items, start: segment.start, end: length })
  }
  if (kept.length <= MAX_SEGMENTS) return kept
  const flat: Message[] = []
  for (const segment of kept) {
    for (let i = 0; i < segment.end - segment.start; i++) flat.push(segment.items[i])
  }
  return [{ items: flat, start: 0, end: flat.length }]
}

/** The array index a property key names, or -1. */
function arrayIndex(key: string): number {
  const first = key.charCodeAt(0)
  if (first < 48 || first > 57) return -1
  if (key.length > 1 && first === 48) return -1
  const index = Number(key)
  return Number.isInteger(index) && index < 2 ** 32 - 1 ? index : -1
}
