import { headBytes, utf8Length } from '@cordis-subagents/shared'

/**
 * The agent's last message, kept within a byte budget while the turn streams.
 *
 * The output rule: the child's final text is its last message. A message is the text under one
 * `messageId`; for agents that send none (Codex), a message ends at other turn work the agent
 * streams (a tool call or its update, a thought, a plan, a usage update at the end of a model
 * response, an update type we do not know). Session-state updates (commands, mode, config options,
 * session info) do not end it: agents send them on their own schedule, so a boundary there would
 * depend on timing. Text sent right before a message with nothing between (Codex's warning at the
 * start of a turn) is part of that message. A blank last message falls back to the last one with
 * text, and a turn without text to the output of the latest earlier turn that had some. Each
 * message keeps its first `maxBytes` UTF-8 bytes; what does not fit is counted, not kept.
 */
export class OutputBuffer {
  private current: Message = empty()
  /** The latest message with text before `current` (the fallback while `current` is blank). */
  private previous?: Message
  /** Message bytes the agent sent in this run, every turn (kept or not). */
  received = 0
  private lastMessageId: string | undefined
  private ended = false
  /** The output of the latest earlier turn that had text, with its dropped bytes (see `newTurn`). */
  private earlier?: { text: string; dropped: number }

  constructor(readonly maxBytes: number) {}

  /** Adds a text chunk; `messageId` (when the agent sends one) marks message boundaries. */
  push(text: string, messageId?: string | null) {
    if (!text) return
    if (messageId) {
      if (this.lastMessageId !== undefined && messageId !== this.lastMessageId) this.ended = true
      else if (this.lastMessageId === messageId) this.ended = false
      this.lastMessageId = messageId
    }
    if (this.ended) this.startMessage()
    const bytes = Buffer.byteLength(text)
    this.received += bytes
    const kept = fit(text, bytes, this.maxBytes - this.current.bytes)
    this.current.text += kept.text
    this.current.bytes += kept.bytes
    this.current.dropped += bytes - kept.bytes
  }

  /** A tool call started: the next text is a new message. */
  toolCall() {
    this.interrupted()
  }

  /**
   * Something other than message text came: for an agent without message ids the next text is
   * a new message (with ids, the id decides).
   */
  interrupted() {
    if (this.lastMessageId === undefined && this.current.text) this.ended = true
  }

  /** The output: the last message with text (of the last turn with any). */
  text(): string {
    return this.final()?.text ?? ''
  }

  /** Bytes of the returned text's message that were dropped for the budget (0 when none). */
  dropped(): number {
    return this.final()?.dropped ?? 0
  }

  /**
   * A new prompt turn in the same session (a follow-up): its text starts afresh, so the output
   * is the last turn's; until that turn says something, the previous turn's output stands.
   */
  newTurn() {
    const last = this.final()
    if (last?.text.trim()) this.earlier = { text: last.text, dropped: last.dropped }
    this.current = empty()
    this.previous = undefined
    this.lastMessageId = undefined
    this.ended = false
  }

  private final(): { text: string; dropped: number } | undefined {
    if (this.current.text.trim()) return this.current
    if (this.previous) return this.previous
    return this.earlier ?? this.current
  }

  private startMessage() {
    this.ended = false
    if (this.current.text.trim()) this.previous = this.current
    this.current = empty()
  }
}

interface Message { text: string; bytes: number; dropped: number }

function empty(): Message {
  return { text: '', bytes: 0, dropped: 0 }
}

/** The longest prefix of `text` within `room` bytes, never splitting a character. */
function fit(text: string, bytes: number, room: number): { text: string; bytes: number } {
  if (bytes <= room) return { text, bytes }
  if (room <= 0) return { text: '', bytes: 0 }
  const cut = headBytes(text, room)
  return { text: cut, bytes: utf8Length(cut) }
}
