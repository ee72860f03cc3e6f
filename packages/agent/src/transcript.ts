import type { Message, ToolMessage } from './types.js'

/**
 * An agent's conversation. Messages before the in-flight turn are "completed"; a turn is
 * closed only when the transcript is balanced, so completed messages are always a valid seed.
 */
export class Transcript {
  private readonly list: Message[]
  private turnStart: number | undefined

  constructor(seed: readonly Message[] = []) {
    this.list = seed.map(cloneMessage)
  }

  get messages(): readonly Message[] {
    return this.list
  }

  get length(): number {
    return this.list.length
  }

  /** Every message of every ended turn; never any of the turn in flight. */
  completedMessages(): Message[] {
    return this.list.slice(0, this.turnStart ?? this.list.length).map(cloneMessage)
  }

  /** A copy for a model request. */
  snapshot(): Message[] {
    return this.list.slice()
  }

  beginTurn(): void {
    this.turnStart = this.list.length
  }

  endTurn(): void {
    this.balance('The tool call was not answered because the turn ended.')
    this.turnStart = undefined
  }

  push(message: Message): void {
    this.list.push(message)
  }

  /**
   * Answers every call of the last assistant message that has no result yet with a synthetic
   * error result. Each assistant message is balanced on its own: a model may reuse call ids
   * across steps (`call_0` every time), so only the results after that message count. The work
   * is proportional to that message and its results, not to the history.
   */
  balance(reason: string): void {
    const list = this.list
    let index = list.length - 1
    while (index >= 0 && list[index].role === 'tool') index--
    const last = list[index]
    if (!last || last.role !== 'assistant' || !last.toolCalls?.length) return
    const answered = new Set<string>()
    for (let i = index + 1; i < list.length; i++) answered.add((list[i] as ToolMessage).toolCallId)
    for (const call of last.toolCalls) {
      if (answered.has(call.id)) continue
      const synthetic: ToolMessage = { role: 'tool', toolCallId: call.id, name: call.name, content: reason, isError: true }
      list.push(synthetic)
      answered.add(call.id)
    }
  }
}

function cloneMessage(message: Message): Message {
  if (message.role === 'assistant' && message.toolCalls) {
    return { ...message, toolCalls: message.toolCalls.map((call) => ({ ...call })) }
  }
  return { ...message }
}
