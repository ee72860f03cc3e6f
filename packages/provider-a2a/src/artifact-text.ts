import { headBytes } from '@cordis-subagents/shared'

/** Most artifacts of one task kept apart; text of later ones is appended to the last. */
export const MAX_ARTIFACTS = 64

/**
 * The text of a task's artifacts, in chunks under one byte budget (`maxOutputBytes`): each chunk
 * is measured once when it arrives, never the text accumulated so far, so the work is linear in
 * the bytes received however many artifacts or appends the remote sends. Text past the budget is
 * dropped (and `truncated` says so); a replaced artifact gives its bytes back.
 */
export class ArtifactText {
  truncated = false
  private readonly artifacts = new Map<string, { chunks: string[]; bytes: number }>()
  private lastId?: string
  private used = 0
  private added = 0

  constructor(private readonly maxBytes: number) {}

  /** Adds an artifact's text: appended to what it had (`append`), else replacing it. */
  add(artifactId: string, text: string, append: boolean) {
    let id = artifactId || `#${this.artifacts.size}`
    let entry = this.artifacts.get(id)
    if (!entry && this.artifacts.size >= MAX_ARTIFACTS) {
      // Past the cap, the text joins the last artifact kept (appended, never replacing it).
      id = this.lastId!
      entry = this.artifacts.get(id)!
      append = true
    }
    if (!entry) {
      entry = { chunks: [], bytes: 0 }
      this.artifacts.set(id, entry)
      this.lastId = id
    } else if (!append) {
      this.used -= entry.bytes
      entry.chunks = []
      entry.bytes = 0
    }
    const kept = this.fit(text)
    if (!kept) return
    if (append) this.added++
    entry.chunks.push(kept.text)
    entry.bytes += kept.bytes
    this.used += kept.bytes
  }

  /** Changes whenever the kept text does (a count of texts added, and the bytes kept). */
  mark(): string {
    return `${this.added}:${this.used}:${this.artifacts.size}`
  }

  /** Forgets every artifact (a whole task snapshot lists them all again). */
  reset() {
    this.artifacts.clear()
    this.lastId = undefined
    this.used = 0
  }

  /** The non-blank artifacts' text, joined by newlines. */
  text(): string {
    const texts: string[] = []
    for (const { chunks } of this.artifacts.values()) {
      const text = chunks.join('')
      if (text.trim()) texts.push(text)
    }
    return texts.join('\n')
  }

  /** What of `text` fits in the budget, measured once. */
  private fit(text: string): { text: string; bytes: number } | undefined {
    if (!text) return undefined
    const room = this.maxBytes - this.used
    if (room <= 0) {
      this.truncated = true
      return undefined
    }
    const bytes = Buffer.byteLength(text, 'utf8')
    if (bytes <= room) return { text, bytes }
    this.truncated = true
    const head = headBytes(text, room)
    return head ? { text: head, bytes: Buffer.byteLength(head, 'utf8') } : undefined
  }
}
