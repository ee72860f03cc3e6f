import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { z } from 'zod'
import type { ClientSdk } from './sdk.js'
import { releaseTaskProgress } from './task-progress.js'

/** Least and most time between two `tasks/get` polls, whatever `pollInterval` the server suggests. */
const MIN_POLL_MS = 50
const MAX_POLL_MS = 5_000
/** How long the `tasks/cancel` of a task left unfinished may take (it is best-effort: its failure is ignored). */
const CANCEL_TIMEOUT_MS = 2_000
/** Task statuses after which the task runs no more: no `tasks/cancel` is owed. */
const ENDED = new Set<unknown>(['completed', 'failed', 'cancelled'])
/** The longest taskId taken from a server: the server picks it, every poll sends it back and the SDK keys the call by it. */
const MAX_TASK_ID_CHARS = 256
/** The create answer read as any object first, so the taskId the SDK registered is known (and released) even when the rest is invalid. */
const AnyResult = z.looseObject({})

type Progress = Parameters<NonNullable<TaskCallOptions['onProgress']>>[0]

export interface TaskCallOptions {
  signal: AbortSignal
  /** The whole call's bound: creating the task, every poll and the result together. */
  timeout: number
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void
  /** The connection's unfinished tasks: this call's task is held there from its creation until it ends or the call does. */
  live?: LiveTasks
}

/** A connection's created tasks that have not ended: its close sends each one its `tasks/cancel` (`cancelAll`) first. */
export class LiveTasks {
  private readonly owed = new Set<() => Promise<void>>()

  /** Holds `cancel` (sent at most once) until the returned release is called. */
  hold(cancel: () => Promise<void>): () => void {
    this.owed.add(cancel)
    return () => void this.owed.delete(cancel)
  }

  /** Sends every held task its `tasks/cancel` (each bounded by `CANCEL_TIMEOUT_MS`, failures ignored). */
  async cancelAll(): Promise<void> {
    await Promise.all([...this.owed].map((cancel) => cancel()))
  }
}

/** Raised when the task outlived the call's bound (the server was sent `tasks/cancel`). */
export class TaskTimeout extends Error {
  override name = 'TaskTimeout'
}

/**
 * A task-augmented `tools/call` (MCP 2025-11-25 tasks): creates the task, polls `tasks/get` at the
 * server's `pollInterval` (clamped) and passes each new status message on as progress, then reads
 * `tasks/result` once the task is terminal (or needs input, which `tasks/result` delivers). The whole
 * call is bounded by `timeout`. Once the task was created, every end of the call without its result (an error, a
 * malformed answer, an abort, the timeout, `live.cancelAll()` at the connection's close) sends it `tasks/cancel`
 * once, unless the task was seen ended; the cancel is bounded and best-effort, and the call still fails with its
 * own error. A taskId over `MAX_TASK_ID_CHARS` fails the call (the task is cancelled). Resolves to the tool's
 * result as `callTool` would; whatever the end, the SDK client's progress entries of the call are released.
 */
export async function callAsTask(
  client: Client, sdk: ClientSdk, name: string, args: Record<string, unknown>, options: TaskCallOptions,
): Promise<unknown> {
  // In-process time (performance.now()): a wall-clock step neither ends the call early nor stretches it.
  const deadline = performance.now() + options.timeout
  const left = () => Math.max(1, deadline - performance.now())
  // A function of this call's own, so the SDK's entry for it is found and released when the call ends.
  const onprogress = (progress: Progress) => options.onProgress?.(progress)
  let taskId: string | undefined
  let owed: (() => Promise<void>) | undefined
  let release = () => {}
  /** The task was seen ended (or its result read): no cancel is owed any more. */
  const ended = () => {
    owed = undefined
    release()
  }
  try {
    const answer = await linked(options.signal, (signal) => client.request(
      { method: 'tools/call', params: { name, arguments: args } },
      AnyResult,
      { signal, timeout: left(), task: { ttl: options.timeout }, onprogress },
    ))
    taskId = registeredTaskId(answer)
    if (taskId !== undefined && !ENDED.has((answer as { task?: { status?: unknown } }).task?.status)) {
      owed = once(cancel.bind(undefined, client, taskId))
      release = options.live?.hold(owed) ?? release
    }
    const created = sdk.CreateTaskResultSchema.parse(answer)
    if (created.task.taskId.length > MAX_TASK_ID_CHARS) {
      throw new Error(`the server named its task with an id of ${created.task.taskId.length} characters, over the ${MAX_TASK_ID_CHARS} ` +
        'this client accepts, so the task was cancelled (tasks/cancel); ask the server\'s authors for shorter task ids')
    }
    const result = await pollToEnd(client, sdk, created.task, options, deadline, ended)
    ended()
    return result
  } catch (error) {
    // Best-effort and bounded (cancel never rejects): the call fails with its own error whatever the cancel did.
    await owed?.()
    throw error
  } finally {
    release()
    releaseTaskProgress(client, onprogress, taskId)
  }
}

type CreatedTask = ReturnType<ClientSdk['CreateTaskResultSchema']['parse']>['task']

/**
 * Polls a created task until it ends (or `deadline`, a `performance.now()` time, passes; `ended` is called once it is
 * seen ended), then reads its result.
 */
async function pollToEnd(
  client: Client, sdk: ClientSdk, created: CreatedTask, options: TaskCallOptions, deadline: number, ended: () => void,
): Promise<unknown> {
  const left = () => Math.max(1, deadline - performance.now())
  const taskId = created.taskId
  let polls = 0
  let said = created.statusMessage
  for (;;) {
    if (performance.now() >= deadline) throw new TaskTimeout(`the task ${taskId} did not finish within ${options.timeout} ms`)
    const task = polls++ === 0 ? created : await poll(client, taskId, options.signal, left())
    if (ENDED.has(task.status)) ended()
    if (task.statusMessage && task.statusMessage !== said) {
      said = task.statusMessage
      options.onProgress?.({ progress: polls, message: said })
    }
    if (task.status === 'cancelled') return { isError: true, content: [{ type: 'text', text: `the server cancelled the task${said ? ` (${said})` : ''}` }] }
    if (task.status === 'completed' || task.status === 'failed' || task.status === 'input_required') {
      const result = (signal: AbortSignal) => client.experimental.tasks.getTaskResult(taskId, sdk.CallToolResultSchema, {
        signal, timeout: left(),
      })
      return await linked(options.signal, result)
    }
    await pause(Math.min(Math.max(task.pollInterval ?? 1_000, MIN_POLL_MS), MAX_POLL_MS, left()), options.signal)
  }
}

/** The taskId the SDK client registered for this answer (it does so for any string `task.taskId`), valid or not. */
function registeredTaskId(answer: unknown): string | undefined {
  const taskId = (answer as { task?: { taskId?: unknown } } | undefined)?.task?.taskId
  return typeof taskId === 'string' ? taskId : undefined
}

/** Sends `tasks/cancel`, bounded by `CANCEL_TIMEOUT_MS`; never rejects (a failed cancel must not hide the call's error). */
async function cancel(client: Client, taskId: string): Promise<void> {
  try {
    await client.experimental.tasks.cancelTask(taskId, { timeout: CANCEL_TIMEOUT_MS })
  } catch {
    // best-effort: the server may be gone, refuse, or have ended the task meanwhile
  }
}

/** `run` at most once: later calls get the first call's promise. */
function once(run: () => Promise<void>): () => Promise<void> {
  let sent: Promise<void> | undefined
  return () => (sent ??= run())
}

function poll(client: Client, taskId: string, signal: AbortSignal, timeout: number) {
  return linked(signal, (own) => client.experimental.tasks.getTask(taskId, { signal: own, timeout }))
}

/**
 * Runs one request under a signal of its own that follows `parent` only while the request runs. The SDK adds an
 * abort listener to a request's signal and never removes it: on the call's signal, every poll of a long task
 * would add one (Node warns past 10), and an abort after the create answer would still send the server a
 * `notifications/cancelled` for that long-answered request.
 */
async function linked<T>(parent: AbortSignal, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const own = new AbortController()
  const abort = () => own.abort(parent.reason)
  if (parent.aborted) abort()
  else parent.addEventListener('abort', abort, { once: true })
  try {
    return await run(own.signal)
  } finally {
    parent.removeEventListener('abort', abort)
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', aborted)
    }
    const aborted = () => {
      done()
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      done()
      resolve()
    }, ms)
    signal.addEventListener('abort', aborted, { once: true })
  })
}
