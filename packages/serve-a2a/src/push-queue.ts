/**
 * The updates of one webhook (one push config of one task) waiting for their POST, bounded: past `max` waiting, the
 * ones a snapshot of the task replaces (status and artifact updates, non-final task snapshots) collapse into one
 * snapshot of the task as of the last of them, in its place; an update in a state the task stops in (completed,
 * failed, canceled, rejected, input or auth required) and a message are kept as they are, in their order. Only when
 * more than `max` of those wait are the oldest dropped. The same collapse runs, whatever the count, after a delivery
 * failed all its retries: a webhook that is down gets the task's latest state once it is back, not every update it
 * missed one by one.
 */
import { type StreamResponse, type Task, TaskState } from '@a2a-js/sdk'

/** Updates waiting per webhook by default (`push.maxQueued`). */
export const DEFAULT_MAX_QUEUED = 64

export interface Serialized { body: string; contentType: string }

/** One update waiting: its body, and whether it is kept as it is (never merged into a snapshot). */
export interface Waiting extends Serialized { kept: boolean }

/** What a collapse did: updates merged into a snapshot (`coalesced`), kept ones dropped past the bound (`dropped`). */
export interface Collapsed { coalesced: number; dropped: number }

/** The states a task stops in: the update that says so is the last of its turn, and always kept. */
const STOP_STATES: ReadonlySet<TaskState> = new Set([
  TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED,
])

/** Whether `update` is kept through a collapse: a message, or a status (or task) in a state the task stops in. */
export function keptAsIs(update: StreamResponse): boolean {
  const payload = (update as { payload?: { $case?: string; value?: { status?: { state?: TaskState } } } }).payload
  if (payload?.$case === 'message') return true
  const state = payload?.$case === 'statusUpdate' || payload?.$case === 'task' ? payload.value?.status?.state : undefined
  return state !== undefined && STOP_STATES.has(state)
}

export class WebhookQueue {
  private waiting: Waiting[] = []
  /** The task as of the last waiting update that a snapshot replaces (what a collapse makes the snapshot of). */
  private task?: Task

  /** `snapshot`: the body of the whole task as one update (undefined if it cannot be made or is too large). */
  constructor(private readonly snapshot: (task: Task) => Serialized | undefined) {}

  get size(): number {
    return this.waiting.length
  }

  /** Queues `item` (`task`: the task as of it); past `max` waiting, collapses. */
  add(item: Waiting, task: Task | undefined, max: number): Collapsed | undefined {
    this.waiting.push(item)
    if (!item.kept) this.task = task
    return this.waiting.length > max ? this.collapse(max) : undefined
  }

  /** The next update to deliver, in order. */
  take(): Waiting | undefined {
    const next = this.waiting.shift()
    if (!this.waiting.length) this.task = undefined
    return next
  }

  /** Drops every waiting update (the webhook went with its task); how many. */
  clear(): number {
    const count = this.waiting.length
    this.waiting = []
    this.task = undefined
    return count
  }

  /**
   * The mergeable updates become one: a snapshot of the task (else the last of them as it is), where the last of them
   * was; then, with more than `max` kept ones waiting, the oldest kept ones go (never the snapshot, the latest state).
   */
  collapse(max: number): Collapsed {
    const last = this.waiting.findLastIndex((item) => !item.kept)
    let coalesced = 0
    if (last >= 0) {
      const merged = this.waiting.filter((item) => !item.kept).length
      const made = this.task && merged > 1 ? this.snapshot(this.task) : undefined
      const into: Waiting = made ? { ...made, kept: false } : this.waiting[last]
      this.waiting = this.waiting.flatMap((item, index) => index === last ? [into] : item.kept ? [item] : [])
      coalesced = merged - 1
    }
    const dropped = Math.max(0, this.waiting.filter((item) => item.kept).length - max)
    let left = dropped
    if (dropped) this.waiting = this.waiting.filter((item) => !(item.kept && left-- > 0))
    return { coalesced, dropped }
  }
}
