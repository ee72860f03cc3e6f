import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { ClientSdk } from './sdk.js'

/** Least and most time between two `tasks/get` polls, whatever `pollInterval` the server suggests. */
const MIN_POLL_MS = 50
const MAX_POLL_MS = 5_000
/** How long a `tasks/cancel` sent after an abort or a timeout may take. */
const CANCEL_TIMEOUT_MS = 5_000

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
 * call is bounded by `timeout`; an abort or the timeout sends `tasks/cancel`. Resolves to the tool's
 * result as `callTool` would.
 */
export async function callAsTask(
  client: Client, sdk: ClientSdk, name: string, args: Record<string, unknown>, options: TaskCallOptions,
): Promise<unknown> {
  const deadline = Date.now() + options.timeout
  const left = () => Math.max(1, deadline - Date.now())
  const created = await client.request(
    { method: 'tools/call', params: { name, arguments: args } },
    sdk.CreateTaskResultSchema,
    { signal: options.signal, timeout: left(), task: { ttl: options.timeout }, onprogress: options.onProgress },
  )
  const taskId = created.task.taskId
  let polls = 0
  let said = created.task.statusMessage
  try {
    for (;;) {
      if (Date.now() >= deadline) throw new TaskTimeout(`the task ${taskId} did not finish within ${options.timeout} ms`)
      const task = polls++ === 0 ? created.task : await poll(client, taskId, options.signal, left())
      if (task.statusMessage && task.statusMessage !== said) {
        said = task.statusMessage
        options.onProgress?.({ progress: polls, message: said })
      }
      if (task.status === 'cancelled') return { isError: true, content: [{ type: 'text', text: `the server cancelled the task${said ? ` (${said})` : ''}` }] }
      if (task.status === 'completed' || task.status === 'failed' || task.status === 'input_required') {
        return await client.experimental.tasks.getTaskResult(taskId, sdk.CallToolResultSchema, { signal: options.signal, timeout: left() })
      }
      await pause(Math.min(Math.max(task.pollInterval ?? 1_000, MIN_POLL_MS), MAX_POLL_MS, left()), options.signal)
    }
  } catch (error) {
    if (options.signal.aborted || error instanceof TaskTimeout || isTimeout(error, sdk)) {
      await client.experimental.tasks.cancelTask(taskId, { timeout: CANCEL_TIMEOUT_MS }).catch(() => {})
    }
    throw error
  }
}

function poll(client: Client, taskId: string, signal: AbortSignal, timeout: number) {
  return client.experimental.tasks.getTask(taskId, { signal, timeout })
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
