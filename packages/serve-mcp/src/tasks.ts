import { randomBytes } from 'node:crypto'
import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js'
import type { Result, Task } from '@modelcontextprotocol/sdk/types.js'
import { headChars } from '@cordis-subagents/shared'

/** How often a client is told to poll `tasks/get` at least (ms); the SDK's blocking `tasks/result` waits at the advertised pace too. */
export const TASK_POLL_MS = 250
/** The share of `maxRequestsPerMinute` the polls of every working task together may take (the rest is left for other requests). */
const POLL_SHARE = 0.5
/** The shortest TTL a task is kept (ms), whatever the client asks. */
const MIN_TASK_TTL_MS = 1_000
/** Tasks of one page of `tasks/list`. */
const PAGE = 50

export interface TaskBounds {
  /** Tasks one session holds at once (working, or finished and kept for their TTL; a new one pushes out the oldest finished one). */
  maxTasks: number
  /** The longest a task and its result are kept, counted from its creation (ms). */
  ttl: number
  /** The poll interval advertised now (ms; HTTP: `pollIntervalFor` of the working tasks of every session); TASK_POLL_MS without it. */
  pollInterval?: () => number
}

/**
 * The poll interval (ms) at which `working` tasks polled together take at most POLL_SHARE of `maxRequestsPerMinute`
 * (the request limit of every client together), and never less than TASK_POLL_MS: 3 tasks under the default 600 poll every 600 ms.
 * `minute`: the limit's window (ms; the HTTP front's `minuteMs`).
 */
export function pollIntervalFor(working: number, maxRequestsPerMinute: number, minute = 60_000): number {
  return Math.max(TASK_POLL_MS, Math.ceil(minute * Math.max(1, working) / Math.max(1, maxRequestsPerMinute * POLL_SHARE)))
}

interface Held {
  task: Task
  result?: Result
  /** Aborts the task's call: `tasks/cancel`, its TTL passing while it works, or the session closing. */
  controller: AbortController
  expiry: NodeJS.Timeout
}

/** Refused task creation: a JSON-RPC error (-32000) whose message starts with the stable code, also in `data.code`. */
class TaskRefusal extends Error {
  readonly code = -32000
  readonly data: { code: string }

  constructor(code: 'MCP_SERVE_TOO_MANY_TASKS' | 'MCP_SERVE_TASK_CLOSED', message: string) {
    super(`${code}: ${message}`)
    this.data = { code }
  }
}

/**
 * The tasks of one MCP session (MCP 2025-11-25 tasks), the SDK's `TaskStore` for its `Server`: the SDK
 * answers `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` from it. Bounded: at most
 * `maxTasks` held (a new one pushes out the oldest finished one; when all work, it is refused), each
 * forgotten `ttl` ms after it was created (the lower of the client's `ttl` and the
 * configured one, at least 1 s); a task still working then is cancelled. Cancelling a task (the client's
 * `tasks/cancel`, its TTL, or `close()`) aborts its call, and the delegation tool cancels its child. Each
 * session has its own store, so a session sees only its own tasks (the SDK's `sessionId` is not needed).
 */
export class SessionTasks implements TaskStore {
  private readonly held = new Map<string, Held>()
  private closed = false

  constructor(private readonly bounds: TaskBounds) {}

  get size(): number {
    return this.held.size
  }

  /** Tasks still working (the ones a client polls). */
  get working(): number {
    let count = 0
    for (const held of this.held.values()) if (held.task.status === 'working') count++
    return count
  }

  /** The abort signal of a task's call (undefined once it is forgotten). */
  signal(taskId: string): AbortSignal | undefined {
    return this.held.get(taskId)?.controller.signal
  }

  async createTask(params: CreateTaskOptions): Promise<Task> {
    if (this.closed) throw new TaskRefusal('MCP_SERVE_TASK_CLOSED', 'this session is closing; no task is created.')
    if (this.held.size >= this.bounds.maxTasks && !this.dropOldestFinished()) {
      throw new TaskRefusal(
        'MCP_SERVE_TOO_MANY_TASKS',
        `this session already runs ${this.held.size} tasks (maxTasks ${this.bounds.maxTasks}); wait for one to finish, or cancel one (tasks/cancel).`,
      )
    }
    const asked = typeof params.ttl === 'number' && Number.isFinite(params.ttl) ? params.ttl : this.bounds.ttl
    const ttl = Math.min(this.bounds.ttl, Math.max(MIN_TASK_TTL_MS, Math.floor(asked)))
    const now = new Date().toISOString()
    const task: Task = { taskId: randomBytes(16).toString('hex'), status: 'working', ttl, createdAt: now, lastUpdatedAt: now }
    const expiry = setTimeout(() => this.forget(task.taskId, 'its TTL passed'), ttl)
    expiry.unref()
    this.held.set(task.taskId, { task, controller: new AbortController(), expiry })
    return this.shown(task)
  }

  /** A task as the client sees it: with the poll interval that fits the request limit now (each `tasks/get` tells the current one). */
  private shown(task: Task): Task {
    return { ...task, pollInterval: this.bounds.pollInterval?.() ?? TASK_POLL_MS }
  }

  async getTask(taskId: string): Promise<Task | null> {
    const held = this.held.get(taskId)
    return held ? this.shown(held.task) : null
  }

  /** Ends a task with its call's result (ignored when it already ended: cancelled, or forgotten). */
  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result): Promise<void> {
    const held = this.held.get(taskId)
    if (!held || terminal(held.task.status)) return
    held.result = result
    this.update(held, status, undefined)
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const held = this.held.get(taskId)
    if (!held) throw new Error(`Task not found: ${taskId}`)
    if (held.result) return held.result
    const why = held.task.statusMessage ?? 'it was cancelled'
    return { content: [{ type: 'text', text: `MCP_SERVE_TASK_CANCELLED: the task was cancelled (${why}); the delegation was cancelled.` }], isError: true }
  }

  /** A status change; `cancelled` (the SDK's `tasks/cancel`) aborts the task's call. A finished task does not change. */
  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string): Promise<void> {
    const held = this.held.get(taskId)
    if (!held || terminal(held.task.status)) return
    this.update(held, status, statusMessage)
    if (status === 'cancelled') held.controller.abort(new Error(statusMessage ?? 'the task was cancelled'))
  }

  /** A working task's progress line (its `statusMessage`, read by `tasks/get`). */
  progress(taskId: string, line: string) {
    const held = this.held.get(taskId)
    if (held && held.task.status === 'working') this.update(held, 'working', line)
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const all = [...this.held.values()].map((held) => this.shown(held.task))
    const start = cursor === undefined ? 0 : all.findIndex((task) => task.taskId === cursor) + 1
    if (cursor !== undefined && start === 0) throw new Error(`unknown cursor ${headChars(cursor, 64)}`)
    const tasks = all.slice(start, start + PAGE)
    return { tasks, ...start + PAGE < all.length ? { nextCursor: tasks.at(-1)!.taskId } : {} }
  }

  /** Cancels every working task (their calls abort) and forgets them all. */
  close() {
    this.closed = true
    for (const taskId of [...this.held.keys()]) this.forget(taskId, 'the session closed')
  }

  /** Makes room by forgetting the finished task created first; false when every held task still works. */
  private dropOldestFinished(): boolean {
    for (const [taskId, held] of this.held) {
      if (terminal(held.task.status)) {
        this.forget(taskId, 'room was needed')
        return true
      }
    }
    return false
  }

  private forget(taskId: string, why: string) {
    const held = this.held.get(taskId)
    if (!held) return
    clearTimeout(held.expiry)
    this.held.delete(taskId)
    if (!terminal(held.task.status)) {
      this.update(held, 'cancelled', `cancelled: ${why}`)
      held.controller.abort(new Error(`the task was cancelled: ${why}`))
    }
  }

  private update(held: Held, status: Task['status'], statusMessage: string | undefined) {
    held.task = { ...held.task, status, lastUpdatedAt: new Date().toISOString(), ...statusMessage === undefined ? {} : { statusMessage } }
  }
}

function terminal(status: Task['status']): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled'
}
