import { copyOf, cut, historyView, type Segment, segmentsOf } from './history.js'
import type { Message, ToolMessage } from './types.js'

/**
 * An agent's conversation. Messages before the in-flight turn are "completed"; a turn is
 * closed only when the transcript is balanced, so completed messages are always a valid seed.
 *
 * Storage is append-only and messages are frozen when appended, so completed turns are shared,
 * never copied: `completed()` and `snapshot()` are O(1) views, and a transcript seeded with
 * another's `completed()` shares its messages (its own messages go to its own storage).
 */
export class Transcript {
  /** The inherited part (a fork's parent's completed turns), shared. */
  private readonly base: readonly Segment[]
  private readonly baseLength: number
  /** This transcript's own messages, append-only. */
  private readonly own: Message[] = []
  private turnStart: number | undefined
  private view?: readonly Message[]
  private viewLength = -1

  /**
   * `seed`: a view from another transcript's `completed()` (shared as is), or any array of valid
   * messages (copied and frozen once, here).
   */
  constructor(seed: readonly Message[] = []) {
    const shared = segmentsOf(seed)
    if (shared) {
      this.base = cut(shared.segments, shared.length)
      this.baseLength = shared.length
    } else {
      this.base = []
      this.baseLength = 0
      for (const message of seed) this.own.push(freezeMessage(cloneMessage(message)))
    }
  }

  /**
   * Every message so far, as a copy: the storage behind it is shared with fork children, so no
   * caller may hold (and change) the live array.
   */
  get messages(): readonly Message[] {
    return this.base.length ? this.snapshot() : this.own.slice()
  }

  get length(): number {
    return this.baseLength + this.own.length
  }

  /** Every message of every ended turn; never any of the turn in flight. Copies, free to edit. */
  completedMessages(): Message[] {
    const completed = this.completed()
    const copies = new Array<Message>(completed.length)
    for (let i = 0; i < completed.length; i++) copies[i] = cloneMessage(completed[i])
    return copies
  }

  /**
   * Every message of every ended turn, as a read-only view that shares the messages (O(1)); the
   * seed of a fork child. Later turns of this transcript never appear in it.
   */
  completed(): readonly Message[] {
    return historyView(this.segments(), this.turnStart ?? this.length, true)
  }

  /**
   * Every message so far, for a model request; it never changes later. A read-only view (O(1))
   * once the history is longer than `SMALL`, a copy below that (cheaper than a view there).
   */
  snapshot(): readonly Message[] {
    const length = this.length
    if (length <= SMALL) return copyOf(this.segments(), length)
    if (this.viewLength !== length) {
      this.view = historyView(this.segments(), length)
      this.viewLength = length
    }
    return this.view!
  }

  beginTurn(): void {
    this.turnStart = this.length
  }

  endTurn(): void {
    this.balance('The tool call was not answered because the turn ended.')
    this.turnStart = undefined
  }

  push(message: Message): void {
    this.own.push(freezeMessage(message))
  }

  /**
   * Answers every call of the last assistant message that has no result yet with a synthetic
   * error result. Each assistant message is balanced on its own: a model may reuse call ids
   * across steps (`call_0` every time), so only the results after that message count. The work
   * is proportional to that message and its results, not to the history.
   */
  balance(reason: string): void {
    let index = this.length - 1
    while (index >= 0 && this.at(index).role === 'tool') index--
    const last = index >= 0 ? this.at(index) : undefined
    if (!last || last.role !== 'assistant' || !last.toolCalls?.length) return
    const answered = new Set<string>()
    for (let i = index + 1; i < this.length; i++) answered.add((this.at(i) as ToolMessage).toolCallId)
    for (const call of last.toolCalls) {
      if (answered.has(call.id)) continue
      this.push({ role: 'tool', toolCallId: call.id, name: call.name, content: reason, isError: true })
      answered.add(call.id)
    }
  }

  private at(index: number): Message {
    if (index >= this.baseLength) return this.own[index - this.baseLength]
    for (let s = this.base.length - 1; s >= 0; s--) {
      const segment = this.base[s]
      if (index >= segment.start) return segment.items[index - segment.start]
    }
    throw new RangeError(`no message ${index}`)
  }

  private segments(): Segment[] {
    const own: Segment = { items: this.own, start: this.baseLength, end: this.length }
    return this.base.length ? [...this.base, own] : [own]
  }
}

/** Up to this many messages a model request gets a plain copy (bounded work), above it a shared view. */
const SMALL = 16

function cloneMessage(message: Message): Message {
  if (message.role === 'assistant' && message.toolCalls) {
    return { ...message, toolCalls: message.toolCalls.map((call) => ({ ...call })) }
  }
  return { ...message }
}

/**
 * Appended messages are shared by every view and fork child, so they must not change: the
 * message and its `toolCalls` list are frozen (a call's `input` is the model's object and stays as it is).
 */
function freezeMessage(message: Message): Message {
  if (message.role === 'assistant' && message.toolCalls) {
    for (const call of message.toolCalls) Object.freeze(call)
    Object.freeze(message.toolCalls)
  }
  return Object.freeze(message)
}
