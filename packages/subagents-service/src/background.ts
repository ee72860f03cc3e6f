import type { Agent } from '@cordis-subagents/agent'
import { type BackgroundStart, BackgroundTask } from './background-task.js'
import { ParentBackground } from './background-book.js'
import { SubagentError } from './errors.js'

export {
  type BackgroundResult, type BackgroundStart, type BackgroundState, BackgroundTask, type Delivery, resultHeader, type TurnEndPolicy,
  type WaitReport,
} from './background-task.js'
export { ParentBackground } from './background-book.js'

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
 * `ctx.subagents.background`: the background delegations of every parent agent, reachable by the
 * tool load that starts them and by the plugin that gives the model its verbs. A parent's book
 * lives as long as the parent agent object (keyed weakly).
 */
export class BackgroundRegistry {
  readonly limits: BackgroundLimits
  /** @internal tasks still running, of every parent. */
  readonly live = new Set<BackgroundTask>()
  private readonly books = new WeakMap<Agent, ParentBackground>()
  private verbNames?: Readonly<Record<'wait' | 'status' | 'cancel' | 'send', string>>
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
  start(start: BackgroundStart): BackgroundTask {
    if (this.stopped) throw new SubagentError('ABORTED', 'The subagents service has stopped; no background delegation was started.')
    const inbox = (start.parent as Partial<Agent> | undefined)?.inbox
    if (typeof inbox?.post !== 'function' || typeof inbox.hold !== 'function' || typeof inbox.onClose !== 'function') {
      throw new SubagentError('INVALID_REQUEST', 'A background delegation needs a parent agent with an inbox (an Agent of @cordis-subagents/agent); use mode: sync for this caller.')
    }
    return this.of(start.parent).start(start)
  }

  /** Names of the verbs a control plugin gives the model, for the start's reply; the returned function withdraws them. */
  useVerbs(names: Readonly<Record<'wait' | 'status' | 'cancel' | 'send', string>>): () => void {
    this.verbNames = names
    return () => { if (this.verbNames === names) this.verbNames = undefined }
  }

  get verbs(): Readonly<Record<'wait' | 'status' | 'cancel' | 'send', string>> | undefined {
    return this.verbNames
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

