import type { BackgroundMessage, BackgroundTask } from '@cordis-subagents/subagents-service'
import type { ToolResult } from '@cordis-subagents/tools'
import { describeError, MAX_MESSAGE_LENGTH } from '@cordis-subagents/shared'

// The background book's wording: a task's result is the delegation's tool result (exactly the
// synchronous format); this is how it reads when it comes back as a message or through a wait.

/** The result of a background task this package started (the book keeps it as it was given). */
export function resultOf(task: BackgroundTask): ToolResult | undefined {
  return task.result as ToolResult | undefined
}

/** The header of a background result; it says who the result is from and how it ended. */
export function resultHeader(task: BackgroundTask): string {
  const result = resultOf(task)
  const asks = (result?.metadata as { stopReason?: unknown } | undefined)?.stopReason === 'pending'
  const ended = task.cancelledBecause ? `was cancelled (${task.cancelledBecause})`
    : result?.isError ? 'ended with an error' : asks ? 'asks a question' : 'finished'
  return `[Background subagent ${task.handle} ${JSON.stringify(task.label)} ${ended}]`
}

/** The inbox message of a result no wait collected, cut to fit one message, with the usage and work it carries. */
export function resultMessage(task: BackgroundTask<ToolResult>): BackgroundMessage {
  const header = resultHeader(task)
  const result = task.result!
  const room = MAX_MESSAGE_LENGTH - header.length - 200
  const body = result.content.length > room ? `${result.content.slice(0, room)}\n\n[Result cut to ${room} characters to fit one message.]` : result.content
  return { text: `${header}\n\n${body}`, usage: result.usage, work: result.work }
}

/** The result of a delegation whose promise broke its never-rejects contract. */
export function failedResult(error: unknown): ToolResult {
  return { isError: true, content: `Subagent failed: ${describeError(error)}` }
}
