/**
 * The agent's message text, kept within a byte budget while the turn streams.
 *
 * The one output rule needs two texts: the text after the last tool call, and (as a fallback
 * when that is empty) all message text. Each keeps its first `maxBytes` UTF-8 bytes; what does
 * not fit is counted, not kept. Separate messages are joined with a newline: a new `messageId`,
 * or, for agents that send none (Codex), text on both sides of anything else the agent streamed
 * (a tool call or its update, a thought, a plan).
 */
export class OutputBuffer {
  private all = ''
  private allBytes = 0
  private afterTool = ''
  private afterToolBytes = 0
  /** Message bytes the agent sent in this run, every turn (kept or not). */
  received = 0
  /** Message bytes that did not fit (counted once per text, the larger of the two losses). */
  private droppedAll = 0
  private droppedAfterTool = 0
  private lastMessageId: string | undefined
  private needsBreak = false
  /** The output of the latest earlier turn that had text, with its dropped bytes (see `newTurn`). */
  private earlier?: { text: string; dropped: number }

  constructor(readonly maxBytes: number) {}

  /** Adds a text chunk; `messageId` (when the agent sends one) marks message boundaries. */
  push(text: string, messageId?: string | null) {
    if (!text) return
    if (messageId && this.lastMessageId !== undefined && messageId !== this.lastMessageId) this.needsBreak = true
    if (messageId) this.lastMessageId = messageId
    if (this.needsBreak) {
      this.needsBreak = false
      if (this.all && !this.all.endsWith('\n')) this.appendAll('\n')
      if (this.afterTool && !this.afterTool.endsWith('\n')) this.appendAfterTool('\n')
    }
    const bytes = Buffer.byteLength(text)
    this.received += bytes
    this.appendAll(text, bytes)
    this.appendAfterTool(text, bytes)
  }

  /** A tool call started: the text after it starts afresh; the next text is a new message. */
  toolCall() {
    this.afterTool = ''
    this.afterToolBytes = 0
    this.droppedAfterTool = 0
    this.interrupted()
  }

  /** Something other than message text came between two chunks: the next text is a new message. */
  interrupted() {
    if (this.all) this.needsBreak = true
  }

  /** The one output rule: the text after the last tool call, else all message text (of the last turn with any). */
  text(): string {
    if (this.afterTool.trim()) return this.afterTool
    return this.all.trim() || !this.earlier ? this.all : this.earlier.text
  }

  /** Bytes of the returned text's source that were dropped for the budget (0 when none). */
  dropped(): number {
    if (this.afterTool.trim()) return this.droppedAfterTool
    return this.all.trim() || !this.earlier ? this.droppedAll : this.earlier.dropped
  }

  /**
   * A new prompt turn in the same session (a follow-up): its text starts afresh, so the output
   * is the last turn's; until that turn says something, the previous turn's output stands.
   */
  newTurn() {
    if (this.text().trim()) this.earlier = { text: this.text(), dropped: this.dropped() }
    this.all = ''
    this.allBytes = 0
    this.afterTool = ''
    this.afterToolBytes = 0
    this.droppedAll = 0
    this.droppedAfterTool = 0
    this.lastMessageId = undefined
    this.needsBreak = false
  }

  private appendAll(text: string, bytes = Buffer.byteLength(text)) {
    const kept = fit(text, bytes, this.maxBytes - this.allBytes)
    this.all += kept.text
    this.allBytes += kept.bytes
    this.droppedAll += bytes - kept.bytes
  }

  private appendAfterTool(text: string, bytes = Buffer.byteLength(text)) {
    const kept = fit(text, bytes, this.maxBytes - this.afterToolBytes)
    this.afterTool += kept.text
    this.afterToolBytes += kept.bytes
    this.droppedAfterTool += bytes - kept.bytes
  }
}

/** The longest prefix of `text` within `room` bytes, never splitting a character. */
function fit(text: string, bytes: number, room: number): { text: string; bytes: number } {
  if (bytes <= room) return { text, bytes }
  if (room <= 0) return { text: '', bytes: 0 }
  let cut = Buffer.from(text).subarray(0, room).toString('utf8')
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1)
  return { text: cut, bytes: Buffer.byteLength(cut) }
}
