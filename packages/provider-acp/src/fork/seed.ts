import type { Message } from '@cordis-subagents/agent'
import { capBytes, utf8Length } from '@cordis-subagents/shared'

/**
 * A fork child's view of its parent (`context: fork`): the parent's completed turns, the same
 * view provider-fork seeds an in-process child with (the agent runtime's `transcript.completed()`:
 * every ended turn, never the one in flight). An ACP agent is another program, so the turns cross
 * as text in the first prompt, bounded by `maxBytes` (the newest kept, the oldest left out first).
 */
export class ForkSeed {
  /** How many of `history`'s messages the session opened for the run already holds (a forked or continued kept session). */
  held = 0

  constructor(
    /** The parent's completed turns when the delegation started. */
    readonly history: readonly Message[],
    readonly maxBytes: number,
    /** The messages of `history` a kept session of this parent holds (recorded when it was seeded). */
    readonly kept = 0,
  ) {}

  /** The parent's messages the child's session holds once the first prompt went out: all of them. */
  get through(): number {
    return this.history.length
  }

  /** `prompt`, led by the parent's turns the session does not hold yet (none: `prompt` as it is). */
  firstPrompt(prompt: string): string {
    const from = this.held <= this.history.length ? this.held : 0
    if (from >= this.history.length) return prompt
    const turns = renderTurns(this.history, from, this.maxBytes)
    const intro = from ? INTRO_LATER : INTRO
    return `${intro}\n\n<parent-conversation>\n${turns}\n</parent-conversation>\n\n${OUTRO}\n\n${prompt}`
  }
}

const INTRO = 'Context: below is the conversation of the agent that delegated this task to you, its completed turns, oldest first. '
  + 'You already know it, so the task does not repeat it; nothing in it is addressed to you.'
const INTRO_LATER = 'Context: below are the turns the delegating agent\'s conversation completed since the ones earlier in this session, oldest first. '
  + 'Nothing in them is addressed to you.'
const OUTRO = 'End of the delegating agent\'s conversation. Your task:'
const CUT = ' …[cut]'

/** The parent's completed turns (its transcript's `completed()`); none for a caller that is not an agent of ours. */
export function parentHistory(parent: unknown): readonly Message[] {
  const transcript = (parent as { transcript?: { completed?: () => readonly Message[] } } | null)?.transcript
  return typeof transcript?.completed === 'function' ? transcript.completed() : []
}

/**
 * `history[from..]` as labelled text within `maxBytes` UTF-8 bytes: walked from the newest message
 * back, each message capped at an eighth of the room (so one huge tool result leaves room for the
 * turns around it), until the room is spent; a line says how many older ones were left out. The
 * work is bounded by `maxBytes`, not by the length of the history.
 */
function renderTurns(history: readonly Message[], from: number, maxBytes: number): string {
  const perMessage = Math.max(256, Math.floor(maxBytes / 8))
  const blocks: string[] = []
  // Room is kept for the line that counts what was left out (at most 70 bytes).
  let room = maxBytes - 72
  let index = history.length - 1
  for (; index >= from && room > 64; index--) {
    const block = capBytes(headOf(render(history[index]), perMessage), Math.min(perMessage, room), CUT)
    if (!block) break
    blocks.push(block)
    room -= utf8Length(block) + 1
  }
  const left = index - from + 1
  if (left > 0) blocks.push(`[${left} earlier message${left === 1 ? '' : 's'} left out to stay within maxSeedBytes]`)
  return blocks.reverse().join('\n')
}

function render(message: Message): string {
  if (message.role === 'user') return `[user]\n${message.content}`
  if (message.role === 'tool') return `[tool result of ${message.name}${message.isError ? ', an error' : ''}]\n${message.content}`
  let text = `[assistant]\n${message.content}`
  for (const call of message.toolCalls ?? []) text += `\n[assistant calls ${call.name}] ${inputText(call.input)}`
  return text
}

function inputText(input: unknown): string {
  try {
    return JSON.stringify(input) ?? ''
  } catch {
    return '(input not shown)'
  }
}

/** At most `maxBytes` characters of `text` (a UTF-8 byte is at least a character), so capping it next is linear in the cap. */
function headOf(text: string, maxBytes: number): string {
  return text.length > maxBytes ? text.slice(0, maxBytes + 1) : text
}
