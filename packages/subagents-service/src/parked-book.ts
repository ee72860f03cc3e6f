import type { Agent } from '@cordis-subagents/agent'
import { describeError } from '@cordis-subagents/shared'
import type { Logger } from 'cordis'
import type { Delegation } from './delegation.js'
import { SubagentError } from './errors.js'
import { idleEndNote } from './park-expiry.js'
import type { SubagentHandle } from './types.js'

/** Parked children one parent may hold at once; past it, the delegating tool reports `PARKED_LIMIT` and ends the child. */
export const MAX_PARKED_PER_PARENT = 64

/**
 * `ctx.subagents.parked`: the children that parked on a question and wait for their parent (its
 * model through `subagent_reply`, or an escalated tool call's resume). The book owns them: it
 * disposes each one once it ends, and every one still held when its parent agent is disposed.
 * A parent's book lives as long as the parent agent object (keyed weakly).
 */
export class ParkedBook {
  private readonly books = new WeakMap<Agent, Map<string, Delegation>>()
  private replyName?: string

  constructor(private readonly log: Logger, private readonly live: Map<string, Delegation>) {}

  /** The name of the verb a control plugin gives models to answer a parked child (`subagent_reply`); the returned function withdraws it. */
  useReply(name: string): () => void {
    this.replyName = name
    return () => { if (this.replyName === name) this.replyName = undefined }
  }

  get reply(): string | undefined {
    return this.replyName
  }

  /**
   * Takes over a parked run of `parent` (idempotent): it is disposed when it ends, or when the
   * parent is. Throws `PARKED_LIMIT` when the parent holds `MAX_PARKED_PER_PARENT` already, and
   * `INVALID_REQUEST` for a parent without an inbox (not an Agent of @cordis-subagents/agent).
   */
  hold(parent: Agent, runId: string): void {
    const run = this.live.get(runId)
    if (!run) throw new SubagentError('NOT_FOUND', `Run ${runId} is not live; only a live run can be held.`)
    const book = this.of(parent)
    if (book.has(run.id)) return
    if (book.size >= MAX_PARKED_PER_PARENT) {
      throw new SubagentError('PARKED_LIMIT',
        `Agent ${parent.id} already has ${MAX_PARKED_PER_PARENT} parked children waiting for answers; answer or close one of them first.`)
    }
    book.set(run.id, run)
    run.ended.then((outcome) => {
      if (book.get(run.id) !== run) return
      book.delete(run.id)
      this.tell(parent, idleEndNote(run, outcome))
      this.dispose(run)
    })
  }

  /** The parent's held run `runId`, if it holds it. */
  get(parent: Agent, runId: string): SubagentHandle | undefined {
    return this.books.get(parent)?.get(runId)
  }

  /** The runs `parent` holds, oldest first. */
  list(parent: Agent): SubagentHandle[] {
    return [...this.books.get(parent)?.values() ?? []]
  }

  private of(parent: Agent): Map<string, Delegation> {
    let book = this.books.get(parent)
    if (book) return book
    const inbox = (parent as Partial<Agent> | undefined)?.inbox
    if (typeof inbox?.onClose !== 'function') {
      throw new SubagentError('INVALID_REQUEST', 'Only an agent of @cordis-subagents/agent (with an inbox) can hold parked children.')
    }
    this.books.set(parent, book = new Map())
    const held = book
    // The parent is disposed: nobody is left to answer its parked children.
    inbox.onClose(() => {
      const runs = [...held.values()]
      held.clear()
      for (const run of runs) this.dispose(run)
    })
    return book
  }

  /** Posts `note` to the parent's inbox (its model reads it at its next step); a closed or full inbox is logged. */
  private tell(parent: Agent, note: string | undefined): void {
    if (!note) return
    try {
      parent.inbox.post(note)
    } catch (error) {
      this.log.warn('the note to %s that a parked child ended was not posted: %s', parent.id, describeError(error))
    }
  }

  private dispose(run: Delegation): void {
    run.dispose().catch((error) => this.log.warn('disposing parked run %s failed: %s', run.id, describeError(error)))
  }
}
