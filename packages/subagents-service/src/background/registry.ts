import type { Agent } from '@cordis-subagents/agent'
import type { BackgroundStart, BackgroundTask } from './task.js'
import { ParentBackground } from './book.js'
import { SubagentError } from '../errors.js'

/** Background delegations of one parent that may be live (starting or running) at once. */
export const MAX_LIVE_PER_PARENT = 16
/** Ended delegations one parent's book remembers (for status and "already delivered"); the oldest go first. */
export const MAX_ENDED_PER_PARENT = 64

export interface BackgroundLimits {
  /** Live background delegations per parent (default 16). */
  maxLive: number
  /** Ended delegations remembered per parent (default 64). */
  maxEnded: number
}

/**
 * `ctx.subagents.background`: the background delegations of every parent agent (tasks, state,
 * cancel and wait), reachable by whoever starts them and whoever acts on them. What a task's result
 * is and how it reads is the starter's. A parent's book lives as long as the parent agent object (keyed weakly).
 */
export class BackgroundRegistry {
  readonly limits: BackgroundLimits
  /** @internal tasks still running, of every parent. */
  readonly live = new Set<BackgroundTask>()
  private readonly books = new WeakMap<Agent, ParentBackground>()
  private stopped = false

  constructor(
    private readonly onLost: (parent: Agent, task: BackgroundTask, reason: string) => void,
    limits: Partial<BackgroundLimits> = {},
  ) {
    this.limits = { maxLive: limits.maxLive ?? MAX_LIVE_PER_PARENT, maxEnded: limits.maxEnded ?? MAX_ENDED_PER_PARENT }
  }

  /** The parent's book (made on first use). */
  of(parent: Agent): ParentBackground {
    let book = this.books.get(parent)
    if (!book) this.books.set(parent, book = new ParentBackground(parent, this))
    return book
  }

  /** The parent's book if it has one. */
  peek(parent: Agent): ParentBackground | undefined {
    return this.books.get(parent)
  }

  /** Starts a background delegation for `start.parent`; `ABORTED` after the service stopped. */
  start<R>(start: BackgroundStart<R>): BackgroundTask<R> {
    if (this.stopped) throw new SubagentError('ABORTED', 'The subagents service has stopped; no background delegation was started.')
    const inbox = (start.parent as Partial<Agent> | undefined)?.inbox
    if (typeof inbox?.post !== 'function' || typeof inbox.hold !== 'function' || typeof inbox.onClose !== 'function') {
      throw new SubagentError('INVALID_REQUEST', 'A background delegation needs a parent agent with an inbox (an Agent of @cordis-subagents/agent); delegate synchronously for this caller.')
    }
    return this.of(start.parent).start(start)
  }

  /** Cancels every live background delegation (the service stops). */
  stopAll(because = 'the subagents service stopped'): void {
    this.stopped = true
    for (const task of [...this.live]) task.cancel(because)
  }

  /** @internal */
  lost(parent: Agent, task: BackgroundTask, reason: string): void {
    this.onLost(parent, task, reason)
  }
}

