import type { Client } from '@modelcontextprotocol/sdk/client/index.js'

/** The SDK client's own bookkeeping of a request's progress (private fields of `Protocol`, shared/protocol.js). */
interface ProgressBooks {
  _progressHandlers?: Map<number, unknown>
  _taskProgressTokens?: Map<string, number>
}

/**
 * Drops what the SDK client keeps for a finished task call's progress: the request's progress handler and the
 * task's taskId → progress token entry. The SDK keeps both past the `CreateTaskResult` so progress may come for the
 * task's whole life, and drops them only when it sees the task end as the task's receiver, never as a client that
 * polls, so they stayed until the connection closed. The entry is found by the handler itself (each call passes a
 * function of its own): a taskId a server gave to two calls at once cannot make one call drop the other's.
 */
export function releaseTaskProgress(client: Client, handler: unknown, taskId: string | undefined): void {
  const books = client as unknown as ProgressBooks
  for (const [token, held] of books._progressHandlers ?? []) {
    if (held !== handler) continue
    books._progressHandlers!.delete(token)
    if (taskId !== undefined && books._taskProgressTokens?.get(taskId) === token) books._taskProgressTokens.delete(taskId)
  }
}
