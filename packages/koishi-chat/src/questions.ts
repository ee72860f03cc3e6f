// The questions posted to chats: open ones by question id and by tag, the newest answered tags
// (so a late reply is told, never resumes twice), and the one way an answer leaves here.
import type { PendingQuestion } from '@cordis-subagents/shared'
import { ChatError } from './errors.js'
import { shownLine } from './chat-text.js'
import { nextQuestionTag } from './ids.js'

/** How many answered (or expired) tags are remembered, to tell a late reply what happened. */
const MAX_CLOSED_TAGS = 256
/** Message ids kept per posted question (a long question may be split by an adapter). */
const MAX_MESSAGE_IDS = 8
/** A tag in a quoted message: `[q12]`. */
const TAG = /\[(q\d{1,9})\]/

/**
 * What is left of a closed question: what a late reply is told, in its channel only. `questionId` is undefined for a
 * note handed over from before a reload: it is told by tag only (tags are unique in the process; question ids are
 * unique only in one service, which may have been loaded again since).
 */
interface ClosedNote { questionId?: string, note: string, channel: string, messageIds: string[] }

/** The closed notes a cleared book leaves for the next book of the same app (a plugin reload), by the app. */
const handedOver = new WeakMap<object, Map<string, ClosedNote>>()

export interface QuestionOwner {
  /** The chat run's id (`r1`). */
  id: string
  /** `platform:channelId` of the chat it was started from. */
  channel: string
}

export interface OpenQuestion<Owner extends QuestionOwner = QuestionOwner> {
  /** `q4821`, `q4822`, … in this process (unique in it, from a random start): what `subagents.answer` and a reply name. */
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
  private readonly closed = new Map<string, ClosedNote>()

  /** `app`: what the plugin is loaded in; the notes of a book cleared there before this one are told here too. */
  constructor(private readonly app?: object) {
    const left = app && handedOver.get(app)
    if (!left) return
    handedOver.delete(app)
    for (const [tag, note] of left) this.closed.set(tag, { ...note, questionId: undefined })
  }

  /** Opens a question once (the same question riding up the tree is one); undefined when it is known already. */
  add(owner: Owner, question: PendingQuestion, runId: string | undefined): OpenQuestion<Owner> | undefined {
    if (this.open.has(question.id)) return undefined
    for (const closed of this.closed.values()) if (closed.questionId === question.id) return undefined
    const entry: OpenQuestion<Owner> = { tag: nextQuestionTag(), question, owner, runId, messageIds: [] }
    this.open.set(question.id, entry)
    this.byTag.set(entry.tag, entry)
    return entry
  }

  /** Opens again a closed question whose answer its run refused (the same entry and tag); false when it is open or known again. */
  reopen(entry: OpenQuestion<Owner>): boolean {
    if (this.open.has(entry.question.id) || this.byTag.has(entry.tag)) return false
    this.closed.delete(entry.tag)
    this.open.set(entry.question.id, entry)
    this.byTag.set(entry.tag, entry)
    return true
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
    this.closed.set(entry.tag, { questionId, note, channel: entry.owner.channel, messageIds: entry.messageIds })
    if (this.closed.size > MAX_CLOSED_TAGS) this.closed.delete(this.closed.keys().next().value!)
    return entry
  }

  /** The open question of this tag in this channel; throws with what happened to it otherwise (another channel's: NOT_FOUND). */
  get(channel: string, tag: string): OpenQuestion<Owner> {
    const entry = this.byTag.get(tag)
    if (entry && entry.owner.channel === channel) return entry
    const closed = this.closed.get(tag)
    if (closed?.channel === channel) throw new ChatError('ALREADY_ANSWERED', `[${tag}] takes no answer any more: ${closed.note}.`)
    throw new ChatError('NOT_FOUND', `No question [${shownLine(tag, 32)}] waits in this channel (\`subagents\` lists them).`)
  }

  isOpen(entry: OpenQuestion<Owner>): boolean {
    return this.open.get(entry.question.id) === entry
  }

  /**
   * The tag a quoted message names in this channel: a posted message's id; else the `[qN]` tag in its text when
   * the quote carries no id (an adapter without ids), or when that question's messages reported none (so its id
   * cannot be checked). A quote whose id is not one of ours names nothing, whatever its text says.
   */
  quotedTag(channel: string, quote: { id?: string, content?: string }): string | undefined {
    const id = quote.id || undefined
    const here = [...this.open.values()].filter((entry) => entry.owner.channel === channel)
    const closed = [...this.closed].filter(([, note]) => note.channel === channel).map(([tag, note]) => ({ tag, ...note }))
    const all = [...here, ...closed]
    if (id !== undefined) for (const entry of all) if (entry.messageIds.includes(id)) return entry.tag
    const tag = TAG.exec((quote.content ?? '').slice(0, 256))?.[1]
    if (tag === undefined || id === undefined) return tag
    return all.some((entry) => entry.tag === tag && entry.messageIds.length === 0) ? tag : undefined
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

  /** Drops everything; the closed notes (close the open questions first) go to the next book of the same app. */
  clear(): void {
    if (this.app) {
      const left = handedOver.get(this.app) ?? new Map<string, ClosedNote>()
      for (const [tag, note] of this.closed) left.set(tag, note)
      while (left.size > MAX_CLOSED_TAGS) left.delete(left.keys().next().value!)
      handedOver.set(this.app, left)
    }
    this.open.clear()
    this.byTag.clear()
    this.closed.clear()
  }
}
