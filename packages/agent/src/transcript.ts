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

  /** Answers every tool call that has no result yet with a synthetic error result. */
  balance(reason: string): void {
    const answered = new Set<string>()
    for (const message of this.list) {
      if (message.role === 'tool') answered.add(message.toolCallId)
    }
    for (let i = this.list.length - 1; i >= 0; i--) {
      const message = this.list[i]
      if (message.role !== 'assistant' || !message.toolCalls?.length) continue
      for (const call of message.toolCalls) {
        if (answered.has(call.id)) continue
        const synthetic: ToolMessage = { role: 'tool', toolCallId: call.id, name: call.name, content: reason, isError: true }
        this.list.push(synthetic)
        answered.add(call.id)
      }
      break
    }
  }
}

function cloneMessage(message: Message): Message {
  if (message.role === 'assistant' && message.toolCalls) {
    return { ...message, toolCalls: message.toolCalls.map((call) => ({ ...call })) }
  }
  return { ...message }
}
