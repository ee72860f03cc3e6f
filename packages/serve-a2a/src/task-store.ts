import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk'
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server'
import { ANONYMOUS } from './auth.js'
import { copyTask } from './task-copy.js'
import { boundHistory, DEFAULT_MAX_HISTORY_BYTES } from './task-history.js'
import { fitPage, summaryOf } from './task-summary.js'

const DEFAULT_PAGE_SIZE = 50
const MAX_PAGE_SIZE = 100

/** The scope a call's tasks are filed under: its credential (the SDK's owner is the user name). */
export function scopeOf(context: ServerCallContext | undefined): string {
  return context?.user?.userName || ANONYMOUS
}

/** The store key of a task: tenant, owner, id (an id is only found in its owner's scope). */
export function taskKey(context: ServerCallContext | undefined, taskId: string): string {
  return `${context?.tenant ?? ''}\u0000${scopeOf(context)}\u0000${taskId}`
}

/**
 * Where a server keeps its tasks: in this process (`BoundedTaskStore`) or shared by several hosts
 * (`PostgresTaskStore`). Both are scoped per credential and bounded.
 */
export interface ServeTaskStore extends TaskStore {
  /** Tasks held now (all credentials); the shared store's last counted value. */
  readonly size: number
  /** Evicts what the bounds say must go (expired, past the cap); running tasks stay. */
  sweep(): void | Promise<void>
  /** Drops what this server holds (memory) or lets go of its connections (shared). */
  clear(): void | Promise<void>
}

interface Entry {
  task: Task
  savedAt: number
}

/**
 * The tasks GetTask, ListTasks, CancelTask and resubscribe can reach, scoped per credential:
 * another credential's task id is not found, exactly like an unknown one. Bounded: a task not
 * running is evicted `ttl` ms after its last update, and past `max` tasks the least recently
 * updated one that is not running goes first. Map order is update order, so both sweeps stop early.
 */
export class BoundedTaskStore implements ServeTaskStore {
  private readonly entries = new Map<string, Entry>()

  constructor(private readonly options: {
    max: number
    ttl: number
    /** Whether the task under this key is running (never evicted). */
    isRunning: (key: string) => boolean
    /** Told the key of each task evicted (what is kept with the task, its webhooks, goes too). */
    forgotten?: (key: string) => void
    /** A task's history is trimmed (oldest first) to this many bytes when saved; default 1 MiB. */
    maxHistoryBytes?: number
    now?: () => number
  }) {}

  /** Tasks held now (all credentials). */
  get size(): number {
    return this.entries.size
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    this.sweep()
    const entry = this.entries.get(taskKey(context, taskId))
    return entry ? copyTask(entry.task) : undefined
  }

  /**
   * Keeps a copy (the SDK goes on using the task it saves). Its history is measured message by message only when the
   * copy's bound of it is over `maxHistoryBytes`: a history under the limit by that bound needs no trimming.
   */
  async save(task: Task, context: ServerCallContext): Promise<void> {
    const key = taskKey(context, task.id)
    const max = this.options.maxHistoryBytes ?? DEFAULT_MAX_HISTORY_BYTES
    const bound = { bytes: 0 }
    const copy = copyTask(task, bound)
    const kept = bound.bytes <= max ? copy : boundHistory(copy, max)
    // Replaced only once the copy is made: a save that throws leaves the task as it was saved last, never gone.
    this.entries.delete(key)
    this.entries.set(key, { task: kept, savedAt: this.now() })
    this.sweep()
  }

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    this.sweep()
    const prefix = taskKey(context, '')
    const pageSize = Math.min(Math.max(1, params.pageSize ?? DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE)
    const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : NaN
    const tasks: Task[] = []
    // Newest update first: the reverse of the map's order.
    for (const [key, { task }] of [...this.entries].reverse()) {
      if (!key.startsWith(prefix)) continue
      if (params.contextId && task.contextId !== params.contextId) continue
      if (params.status && task.status?.state !== params.status) continue
      if (!Number.isNaN(after) && !(Date.parse(task.status?.timestamp ?? '') > after)) continue
      tasks.push(task)
    }
    const offset = /^\d{1,9}$/.test(params.pageToken ?? '') ? Number(params.pageToken) : 0
    const page = fitPage(tasks.slice(offset, offset + pageSize), (task) => summaryOf(task, params))
    const next = offset + page.length
    return { tasks: page, nextPageToken: next < tasks.length ? String(next) : '', pageSize, totalSize: tasks.length }
  }

  /** Evicts expired tasks, then the oldest until at most `max` remain; running tasks stay. */
  sweep(): void {
    const now = this.now()
    for (const [key, entry] of this.entries) {
      if (entry.savedAt + this.options.ttl > now) break
      if (!this.options.isRunning(key)) this.evict(key)
    }
    if (this.entries.size <= this.options.max) return
    for (const key of this.entries.keys()) {
      if (this.entries.size <= this.options.max) break
      if (!this.options.isRunning(key)) this.evict(key)
    }
  }

  clear(): void {
    for (const key of [...this.entries.keys()]) this.evict(key)
  }

  private evict(key: string): void {
    this.entries.delete(key)
    this.options.forgotten?.(key)
  }

  private now(): number {
    return (this.options.now ?? Date.now)()
  }
}
