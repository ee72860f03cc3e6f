import type { Message } from './types.js'

// Histories shared between transcripts, and a seed's check and copy: a transcript enters this file only when it is
// seeded with messages or hands out its completed turns (`completed()`). A plain delegation's agent starts empty and
// never does; nor does a fork child, which is seeded with its parent's transcript itself (transcript.ts).

/**
 * Histories handed out by a transcript (its completed turns) are plain frozen arrays of frozen messages: reading one
 * is an array index, with no trap or lookup behind it. The array is built once per length (copy-on-append: an append
 * makes the next one a new array, the old one stays as it was), and shared by reference from then on.
 *
 * Each is kept here with a plain (unfrozen) copy of its pointers. V8 (Node 20) copies a frozen array (`slice`,
 * `concat`) on a slow path, element by element, and a transcript seeded with one joins it with its own messages on
 * every model request: joining from the plain copy keeps that a block copy. The copy is made while the array is still
 * plain (one block copy), and is dropped with the history (a WeakMap).
 */
const frozenHistories = new WeakMap<object, readonly Message[]>()

/** Freezes `messages` (already frozen messages) and remembers it as a history that may be shared as is. */
export function freezeHistory(messages: Message[]): readonly Message[] {
  const plain = messages.slice()
  Object.freeze(messages)
  frozenHistories.set(messages, plain)
  return messages
}

/** The plain copy of a history made by `freezeHistory` (a seed shared without a copy or a check); undefined for any other value. */
export function plainOf(value: unknown): readonly Message[] | undefined {
  return typeof value === 'object' && value !== null ? frozenHistories.get(value) : undefined
}

export function cloneMessage(message: Message): Message {
  if (message.role === 'assistant' && message.toolCalls) {
    return { ...message, toolCalls: message.toolCalls.map((call) => ({ ...call })) }
  }
  return { ...message }
}

const ROLES = new Set(['user', 'assistant', 'tool'])

/** What is wrong with `create`'s `options.seed`, or undefined (another transcript's completed() was checked as it was appended). */
export function seedProblem(seed: unknown): string | undefined {
  if (plainOf(seed)) return undefined
  if (!Array.isArray(seed)) return 'options.seed must be an array of transcript messages.'
  let bad = -1
  seed.forEach((message: Message | undefined, i) => {
    if (bad < 0 && (!message || !ROLES.has(message.role) || typeof message.content !== 'string')) bad = i
  })
  return bad < 0 ? undefined : `options.seed[${bad}] is not a transcript message ({ role: 'user' | 'assistant' | 'tool', content: string }).`
}
