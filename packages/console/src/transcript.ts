import type { Message } from '@cordis-subagents/agent'
import type { SubagentUpdate } from '@cordis-subagents/subagents-service'
import { headChars } from '@cordis-subagents/shared'

/** One line of a child's transcript as the page shows it. */
export interface TranscriptEntry {
  kind: 'user' | 'assistant' | 'tool-call' | 'tool-result' | 'text' | 'thought' | 'plan' | 'status'
  text: string
  tool?: string
  isError?: boolean
  step?: number
}

/** One page of a transcript. `offset` counts from the first entry ever (earlier ones may be gone). */
export interface TranscriptPage {
  /** `agent`: the in-process child's own transcript; `recorded`: progress the console kept from events. */
  source: 'agent' | 'recorded'
  offset: number
  /** The first offset still available (entries before it were dropped from the ring). */
  first: number
  total: number
  entries: TranscriptEntry[]
}

/** Largest page one request gets. */
export const MAX_PAGE = 100

/**
 * Cuts `text` to `max` characters (UTF-16 code units, a string's `length`), never inside a surrogate pair, marked
 * with the number of characters cut in the same unit.
 */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text
  const head = headChars(text, max)
  return `${head} …[${text.length - head.length} more characters]`
}

/**
 * Progress of a child whose transcript is not in this process (ACP, A2A), kept from its
 * `subagent/update` events: a ring of `capacity` entries, each cut to `maxChars`.
 */
export class TranscriptRing {
  private readonly entries: TranscriptEntry[] = []
  private dropped = 0

  constructor(private readonly capacity: number, private readonly maxChars: number) {}

  get total(): number {
    return this.dropped + this.entries.length
  }

  /** Keeps what an update says about the conversation; counters (step, usage) are not entries. */
  record(update: SubagentUpdate): void {
    if (update.kind === 'step' || update.kind === 'usage') return
    const entry: TranscriptEntry = { kind: update.kind, text: cut(typeof update.text === 'string' ? update.text : '', this.maxChars) }
    if (typeof update.tool === 'string') entry.tool = cut(update.tool, 200)
    if (update.isError === true) entry.isError = true
    if (typeof update.step === 'number') entry.step = update.step
    this.entries.push(entry)
    if (this.entries.length > this.capacity) {
      this.entries.shift()
      this.dropped++
    }
  }

  page(offset: number, limit: number): TranscriptPage {
    const from = Math.max(offset, this.dropped)
    const start = from - this.dropped
    return { source: 'recorded', offset: from, first: this.dropped, total: this.total, entries: this.entries.slice(start, start + limit) }
  }
}

/** A page of an in-process agent's own transcript: its messages as entries (tool calls split out). */
export function agentTranscriptPage(messages: readonly Message[], offset: number, limit: number, maxChars: number): TranscriptPage {
  const entries: TranscriptEntry[] = []
  let index = 0
  const add = (make: () => TranscriptEntry) => {
    if (index >= offset && entries.length < limit) entries.push(make())
    index++
  }
  for (const message of messages) {
    if (message.role === 'user') add(() => ({ kind: 'user', text: cut(message.content, maxChars) }))
    else if (message.role === 'tool') {
      add(() => ({ kind: 'tool-result', tool: message.name, text: cut(message.content, maxChars), ...message.isError ? { isError: true } : {} }))
    } else {
      if (message.content) add(() => ({ kind: 'assistant', text: cut(message.content, maxChars) }))
      for (const call of message.toolCalls ?? []) add(() => ({ kind: 'tool-call', tool: call.name, text: cut(JSON.stringify(call.input) ?? '', maxChars) }))
    }
  }
  return { source: 'agent', offset: Math.min(offset, index), first: 0, total: index, entries }
}
