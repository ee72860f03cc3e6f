import { MAX_MESSAGE_LENGTH, quotedLines, type Usage, type WorkCounts } from '@cordis-subagents/shared'
import { AgentError } from './errors.js'

/** Most messages waiting in an agent's inbox by default (`create({ maxInboxMessages })`); a poster past it gets `INBOX_FULL`. */
export const MAX_INBOX_MESSAGES = 1024
/** Largest message one `post` takes (UTF-16 code units; about 1 MiB of text). */
export const MAX_INBOX_MESSAGE_LENGTH = MAX_MESSAGE_LENGTH

/** What a message carries besides its text: a delegation's usage and work, rolled up when the message is read. */
export interface InboxDelegation {
  usage?: Usage
  work?: WorkCounts
  /** A typed delegation's validated value (its JSON is in the message's text); the `message` event carries it. */
  structured?: unknown
  /** Read before the turn ends: a turn about to end on a typed answer with it unread takes one more step (`feedsOnce`). */
  feed?: true
}

/** One waiting message. */
export interface InboxMessage {
  content: string
  delegation?: InboxDelegation
  /** Who posted it (provenance): the sender's handle id (`AgentHandle.post`); absent for a host's plain `post`. */
  from?: string
}

/**
 * Messages for an agent from outside its turn (a background child's result, a follow-up for a
 * child), and the work its turn should wait for before it ends.
 *
 * The agent's loop reads waiting messages before every model call, as user messages. A turn that
 * would end while messages wait takes one more step with them; while a hold is open it waits
 * (for a message, or for the holds to close) instead of ending.
 */
export class Inbox {
  private readonly queue: InboxMessage[] = []
  // Made on first use: most inboxes never get a close listener or a hold (an agent costs less).
  private closeListeners?: Set<(unread: readonly InboxMessage[]) => void>
  private holds?: Set<object>
  private wake?: () => void
  /** The last turn `feedsOnce` fed (held only until the next one is fed). */
  private fedTurn?: object
  private closed = false

  /** `limit`: most waiting messages (default `MAX_INBOX_MESSAGES`). */
  constructor(private readonly owner: string, readonly limit = MAX_INBOX_MESSAGES) {}

  get size(): number {
    return this.queue.length
  }

  /** Open holds: work the running turn waits for before it ends. */
  get held(): number {
    return this.holds?.size ?? 0
  }

  /**
   * Queues `content` for the next model call. With `delegation` (a background child's result), its
   * usage and work roll up into the agent like a delegating tool call's when the message is read.
   */
  post(content: string, delegation?: InboxDelegation, from?: string): InboxMessage {
    if (this.closed) throw new AgentError('DISPOSED', `Agent ${this.owner} has been disposed; its inbox takes no more messages.`)
    if (typeof content !== 'string' || !content.trim()) throw new AgentError('INVALID_PROMPT', 'A posted message must be a non-empty string.')
    if (content.length > MAX_INBOX_MESSAGE_LENGTH) {
      throw new AgentError('INVALID_PROMPT', `A posted message is at most ${MAX_INBOX_MESSAGE_LENGTH} characters (got ${content.length}); shorten it.`)
    }
    if (this.queue.length >= this.limit) {
      throw new AgentError('INBOX_FULL', `Agent ${this.owner} has ${this.limit} unread messages; wait for it to read them (run a turn) before posting more.`)
    }
    const message: InboxMessage = delegation ? { content, delegation } : { content }
    if (from !== undefined) message.from = from
    this.queue.push(message)
    this.signal()
    return message
  }

  /**
   * Takes out those of `messages` (entries `post` returned) that still wait, oldest first; every
   * other message stays. For a poster that must know which of its own messages were not read.
   */
  withdraw(messages: ReadonlySet<InboxMessage>): InboxMessage[] {
    if (!messages.size || !this.queue.length) return []
    const taken: InboxMessage[] = []
    let kept = 0
    for (const message of this.queue) {
      if (messages.has(message)) taken.push(message)
      else this.queue[kept++] = message
    }
    this.queue.length = kept
    return taken
  }

  /**
   * Puts messages a turn had read back at the front of the queue, in order (an interrupted turn's).
   * Dropped when the inbox is closed. Not capped: they were in the queue before.
   */
  putBack(messages: InboxMessage[]): void {
    if (this.closed || !messages.length) return
    this.queue.unshift(...messages)
    this.signal()
  }

  /** Keeps the running turn (and any later one) from ending until the returned release is called. */
  hold(): () => void {
    if (this.closed) throw new AgentError('DISPOSED', `Agent ${this.owner} has been disposed; nothing can hold its turn.`)
    const token = {}
    const holds = this.holds ??= new Set()
    holds.add(token)
    return () => {
      if (holds.delete(token)) this.signal()
    }
  }

  /**
   * Whether `turn`, about to end on its answer, takes one more step to read waiting messages marked
   * `feed`: only with a step `left` under its limit, and once per turn (the first call for a turn decides).
   */
  feedsOnce(turn: object, left: boolean): boolean {
    if (!left || this.fedTurn === turn || !this.queue.some((message) => message.delegation?.feed)) return false
    this.fedTurn = turn
    return true
  }

  /** Whether a waiting message carries `delegation` (a poster asking whether its result is still unread). */
  carries(delegation: object): boolean {
    return this.queue.some((message) => message.delegation === delegation)
  }

  /** Every waiting message, oldest first; the inbox is empty after. */
  drain(): string[] {
    return this.take().map((message) => message.content)
  }

  /** Every waiting message with what it carries, oldest first; the inbox is empty after. */
  take(): InboxMessage[] {
    return this.queue.splice(0, this.queue.length)
  }

  /**
   * Calls `listener` once when the inbox closes (its agent is disposed) with the messages that were
   * never read; returns an unsubscribe.
   */
  onClose(listener: (unread: readonly InboxMessage[]) => void): () => void {
    if (this.closed) {
      queueMicrotask(() => listener([]))
      return () => {}
    }
    const listeners = this.closeListeners ??= new Set()
    listeners.add(listener)
    return () => { listeners.delete(listener) }
  }

  /** Resolves at the next post or release (at once when a message already waits or nothing holds). */
  changed(): Promise<void> {
    if (this.queue.length || !this.holds?.size) return Promise.resolve()
    return new Promise((resolve) => {
      const previous = this.wake
      this.wake = () => {
        previous?.()
        resolve()
      }
    })
  }

  /** Drops waiting messages and holds; later posts and holds throw `DISPOSED`. */
  close(): string[] {
    this.closed = true
    this.holds?.clear()
    const unread = this.take()
    this.signal()
    const listeners = [...this.closeListeners ?? []]
    this.closeListeners?.clear()
    for (const listener of listeners) {
      try {
        listener(unread)
      } catch {
        // One owner's cleanup must not keep the others from theirs.
      }
    }
    return unread.map((message) => message.content)
  }

  private signal(): void {
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }
}

/** The label of a message without a sender in a labelled block. */
const HOST = 'host'

/**
 * What a step appends to the transcript for the inbox messages it read: each message as its own user
 * message, or, when any of them has a sender (`from`), all of them as ONE user message with each
 * item labelled by its sender (`host` for a message posted without one). Returns how many it appended.
 * A labelled item's text is quoted line by line (`quotedLines`): only the labels start a line, so a
 * sender's text cannot forge another item.
 */
export function appendInbox(push: (message: { role: 'user'; content: string }) => void, messages: readonly InboxMessage[]): number {
  if (!messages.some((message) => message.from !== undefined)) {
    for (const { content } of messages) push({ role: 'user', content })
    return messages.length
  }
  const items = messages.map((message) => `[from ${message.from ?? HOST}]\n${quotedLines(message.content)}`)
  push({ role: 'user', content: `[inbox: ${messages.length} message${messages.length === 1 ? '' : 's'}]\n\n${items.join('\n\n')}` })
  return 1
}

/**
 * Whether a turn about to end on its answer takes one more step to read its inbox (`left`: a step is
 * left under its limit). While holds are open and nothing waits it waits (`onWait` gets the open holds
 * each time), then says whether messages wait; `'aborted'` when the turn was aborted. A typed answer
 * (`typed`) waits only when a hold is open at its end: results already delivered are left unread
 * (`feedsOnce` decides those), as they always were.
 */
export async function readsBeforeEnd(
  inbox: Inbox,
  left: boolean,
  typed: boolean,
  abort: { aborted: boolean; rejection: Promise<never> },
  onWait: (holds: number) => void,
): Promise<boolean | 'aborted'> {
  if (!left || (typed && !inbox.held)) return false
  while (!inbox.size && inbox.held) {
    onWait(inbox.held)
    try {
      await Promise.race([inbox.changed(), abort.rejection])
    } catch {
      return 'aborted'
    }
  }
  if (abort.aborted) return 'aborted'
  return inbox.size > 0
}
