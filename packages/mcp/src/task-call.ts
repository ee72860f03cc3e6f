import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { z } from 'zod'
import type { ClientSdk } from './sdk.js'
import { releaseTaskProgress } from './task-progress.js'

/** Least and most time between two `tasks/get` polls, whatever `pollInterval` the server suggests. */
const MIN_POLL_MS = 50
const MAX_POLL_MS = 5_000
/** How long a `tasks/cancel` sent after an abort or a timeout may take. */
const CANCEL_TIMEOUT_MS = 5_000
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
}

/** Raised when the task outlived the call's bound (the server was sent `tasks/cancel`). */
export class TaskTimeout extends Error {
  override name = 'TaskTimeout'
}

/**
 * A task-augmented `tools/call` (MCP 2025-11-25 tasks): creates the task, polls `tasks/get` at the
 * server's `pollInterval` (clamped) and passes each new status message on as progress, then reads
 * `tasks/result` once the task is terminal (or needs input, which `tasks/result` delivers). The whole
 * call is bounded by `timeout`; an abort or the timeout sends `tasks/cancel`. A taskId over
 * `MAX_TASK_ID_CHARS` fails the call (the task is cancelled). Resolves to the tool's result as `callTool`
 * would; whatever the end, the SDK client's progress entries of the call are released.
 */
export async function callAsTask(
  client: Client, sdk: ClientSdk, name: string, args: Record<string, unknown>, options: TaskCallOptions,
): Promise<unknown> {
  const deadline = Date.now() + options.timeout
  const left = () => Math.max(1, deadline - Date.now())
  // A function of this call's own, so the SDK's entry for it is found and released when the call ends.
  const onprogress = (progress: Progress) => options.onProgress?.(progress)
  let taskId: string | undefined
  try {
    const answer = await linked(options.signal, (signal) => client.request(
      { method: 'tools/call', params: { name, arguments: args } },
      AnyResult,
      { signal, timeout: left(), task: { ttl: options.timeout }, onprogress },
    ))
    taskId = registeredTaskId(answer)
    const created = sdk.CreateTaskResultSchema.parse(answer)
    if (created.task.taskId.length > MAX_TASK_ID_CHARS) {
      await cancel(client, created.task.taskId)
      throw new Error(`the server named its task with an id of ${created.task.taskId.length} characters, over the ${MAX_TASK_ID_CHARS} ` +
        'this client accepts, so the task was cancelled (tasks/cancel); ask the server\'s authors for shorter task ids')
    }
    return await pollToEnd(client, sdk, created.task, options, deadline)
  } finally {
    releaseTaskProgress(client, onprogress, taskId)
  }
}

type CreatedTask = ReturnType<ClientSdk['CreateTaskResultSchema']['parse']>['task']

/** Polls a created task until it ends (or its bound passes), then reads its result; an abort or the timeout cancels it. */
async function pollToEnd(
  client: Client, sdk: ClientSdk, created: CreatedTask, options: TaskCallOptions, deadline: number,
): Promise<unknown> {
  const left = () => Math.max(1, deadline - Date.now())
  const taskId = created.taskId
  let polls = 0
  let said = created.statusMessage
  try {
    for (;;) {
      if (Date.now() >= deadline) throw new TaskTimeout(`the task ${taskId} did not finish within ${options.timeout} ms`)
      const task = polls++ === 0 ? created : await poll(client, taskId, options.signal, left())
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
  } catch (error) {
    if (options.signal.aborted || error instanceof TaskTimeout || isTimeout(error, sdk)) await cancel(client, taskId)
    throw error
  }
}

/** The taskId the SDK client registered for this answer (it does so for any string `task.taskId`), valid or not. */
function registeredTaskId(answer: unknown): string | undefined {
  const taskId = (answer as { task?: { taskId?: unknown } } | undefined)?.task?.taskId
  return typeof taskId === 'string' ? taskId : undefined
}

function cancel(client: Client, taskId: string): Promise<unknown> {
  return client.experimental.tasks.cancelTask(taskId, { timeout: CANCEL_TIMEOUT_MS }).catch(() => {})
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

function isTimeout(error: unknown, sdk: ClientSdk): boolean {
  return error instanceof sdk.McpError && error.code === sdk.ErrorCode.RequestTimeout
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
