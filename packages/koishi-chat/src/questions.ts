// The questions posted to chats: open ones by question id and by tag, the newest answered tags
// (so a late reply is told, never resumes twice), and the one way an answer leaves here.
import type { PendingQuestion } from '@cordis-subagents/shared'
import { ChatError } from './errors.js'
import { shownLine } from './chat-text.js'

/** How many answered (or expired) tags are remembered, to tell a late reply what happened. */
const MAX_CLOSED_TAGS = 256
/** Message ids kept per posted question (a long question may be split by an adapter). */
const MAX_MESSAGE_IDS = 8
/** A tag in a quoted message: `[q12]`. */
const TAG = /\[(q\d{1,9})\]/

export interface QuestionOwner {
  /** The chat run's id (`r1`). */
  id: string
  /** `platform:channelId` of the chat it was started from. */
  channel: string
}

export interface OpenQuestion<Owner extends QuestionOwner = QuestionOwner> {
  /** `q1`, `q2`, … in this process: what `subagents.answer` and a reply name. */
  tag: string
  question: PendingQuestion
  owner: Owner
  /** The delegation run to resume by id; undefined when the root agent itself is parked on it. */
  runId?: string
  messageIds: string[]
}

export class QuestionBook<Owner extends QuestionOwner> {
  private readonly open = new Map<string, OpenQuestion<Owner>>()
  private readonly byTag = new Map<string, OpenQuestion<Owner>>()
  private readonly closed = new Map<string, string>()
  private sequence = 0

  /** Opens a question once (the same question riding up the tree is one); undefined when it is known already. */
  add(owner: Owner, question: PendingQuestion, runId: string | undefined): OpenQuestion<Owner> | undefined {
    if (this.open.has(question.id)) return undefined
    for (const note of this.closed.values()) if (note.startsWith(`${question.id} `)) return undefined
    const entry: OpenQuestion<Owner> = { tag: `q${++this.sequence}`, question, owner, runId, messageIds: [] }
    this.open.set(question.id, entry)
    this.byTag.set(entry.tag, entry)
    return entry
  }

  posted(entry: OpenQuestion<Owner>, ids: readonly unknown[]): void {
    for (const id of ids) if (typeof id === 'string' && entry.messageIds.length < MAX_MESSAGE_IDS) entry.messageIds.push(id)
  }

  /** Closes a question (answered here or elsewhere, or expired); the note is what a late reply is told. */
  close(questionId: string, note: string): OpenQuestion<Owner> | undefined {
    const entry = this.open.get(questionId)
    if (!entry) return undefined
    this.open.delete(questionId)
    this.byTag.delete(entry.tag)
    this.closed.set(entry.tag, `${questionId} ${note}`)
    if (this.closed.size > MAX_CLOSED_TAGS) this.closed.delete(this.closed.keys().next().value!)
    return entry
  }

  /** The open question of this tag in this channel; throws with what happened to it otherwise. */
  get(channel: string, tag: string): OpenQuestion<Owner> {
    const entry = this.byTag.get(tag)
    if (entry && entry.owner.channel === channel) return entry
    const note = this.closed.get(tag)
    if (note !== undefined) throw new ChatError('ALREADY_ANSWERED', `[${tag}] takes no answer any more: ${note.slice(note.indexOf(' ') + 1)}.`)
    throw new ChatError('NOT_FOUND', `No question [${shownLine(tag, 32)}] waits in this channel (\`subagents\` lists them).`)
  }

  isOpen(entry: OpenQuestion<Owner>): boolean {
    return this.open.get(entry.question.id) === entry
  }

  /** The tag a quoted message names: a posted message's id, or a `[qN]` tag in its text. */
  quotedTag(channel: string, quote: { id?: string, content?: string }): string | undefined {
    for (const entry of this.open.values()) {
      if (entry.owner.channel === channel && quote.id !== undefined && entry.messageIds.includes(quote.id)) return entry.tag
    }
    return TAG.exec((quote.content ?? '').slice(0, 256))?.[1]
  }

  /** The open questions of one channel, oldest first. */
  inChannel(channel: string): OpenQuestion<Owner>[] {
    return [...this.open.values()].filter((entry) => entry.owner.channel === channel)
  }

  /** The open questions of one chat run. */
  of(owner: Owner): OpenQuestion<Owner>[] {
    return [...this.open.values()].filter((entry) => entry.owner === owner)
  }

  /** The open question waiting on delegation run `runId`, if any. */
  ofRun(runId: string): OpenQuestion<Owner>[] {
    return [...this.open.values()].filter((entry) => entry.runId === runId)
  }

  clear(): void {
    this.open.clear()
    this.byTag.clear()
    this.closed.clear()
  }
}
