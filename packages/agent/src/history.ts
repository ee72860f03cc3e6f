import type { Message } from './types.js'

/**
 * Histories handed out by a transcript (its completed turns, a model request's messages) are
 * plain frozen arrays of frozen messages: reading one is an array index, with no trap or lookup
 * behind it. The array is built once per length (copy-on-append: an append makes the next one a
 * new array, the old one stays as it was), and shared by reference from then on.
 */

/** Frozen histories made by `freezeHistory`: their messages were validated and frozen when appended. */
const frozenHistories = new WeakSet<object>()

/** Freezes `messages` (already frozen messages) and remembers it as a history that may be shared as is. */
export function freezeHistory(messages: Message[]): readonly Message[] {
  Object.freeze(messages)
  frozenHistories.add(messages)
  return messages
}

/** Whether `value` is a history made by `freezeHistory` (a fork seed shared without a copy or a check). */
export function isFrozenHistory(value: unknown): boolean {
  return typeof value === 'object' && value !== null && frozenHistories.has(value)
}

/** The first `length` messages of `base` followed by `own`, as one new array. */
export function joined(base: readonly Message[], own: readonly Message[], length: number): Message[] {
  if (length <= base.length) return base.slice(0, length)
  if (!base.length) return own.slice(0, length)
  // concat of two packed arrays is a block copy; slicing first only when the tail is cut.
  const tail = length - base.length === own.length ? own : own.slice(0, length - base.length)
  return base.concat(tail)
}
