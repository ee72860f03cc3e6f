import type { Message, Task } from '@a2a-js/sdk'
import { countOf, CROSSING_KEY } from '@cordis-subagents/shared'
import { encodedBytes } from './task-codec.js'

/** The default of `maxHistoryBytes`: a task's history keeps its newest messages within 1 MiB. */
export const DEFAULT_MAX_HISTORY_BYTES = 1024 * 1024

/** The message id of the marker that stands for trimmed history (always first in `history`). */
export const TRIMMED_ID = 'cordis-subagents-history-trimmed'

/** What the marker says was trimmed so far: messages and their bytes (as stored JSON). */
interface Trimmed {
  messages: number
  bytes: number
}

/**
 * The task with its history within `maxBytes` (stored JSON of its messages): the oldest messages
 * go first, and one marker message at the front says how many (and how many bytes) went, in its
 * text and in `metadata.cordisSubagents.historyTrimmed`. The newest message always stays, so a
 * history holds at most `maxBytes` plus one message (itself bounded by `maxBodyBytes`, or by what
 * the agent says). Work is one size per message: a bounded history makes each save bounded too.
 * Only `task.history` is replaced (a shallow copy of the task is enough to keep the caller's).
 */
export function boundHistory(task: Task, maxBytes: number): Task {
  const history = task.history ?? []
  const marker = history[0]?.messageId === TRIMMED_ID ? history[0] : undefined
  const messages = marker ? history.slice(1) : history
  const sizes = messages.map(messageBytes)
  let total = sizes.reduce((sum, size) => sum + size, 0)
  if (total <= maxBytes) return task
  let cut = 0
  const trimmed: Trimmed = { ...trimmedOf(marker) }
  while (total > maxBytes && cut < messages.length - 1) {
    total -= sizes[cut]
    trimmed.messages++
    trimmed.bytes += sizes[cut]
    cut++
  }
  task.history = [markerOf(task, trimmed), ...messages.slice(cut)]
  return task
}

/**
 * A message's size as stored JSON. Bytes sit only in a file part's content (`raw`, a Buffer): a
 * message without one is measured by plain `JSON.stringify` (V8's fast path, no replacer called
 * per key), which writes exactly what the codec writes when there are no bytes to turn into base64.
 */
function messageBytes(message: Message): number {
  for (const part of message.parts ?? []) if (part?.content?.value instanceof Uint8Array) return encodedBytes(message)
  return Buffer.byteLength(JSON.stringify(message) ?? '')
}

/** What a marker says was trimmed: only counts that are whole numbers (a client's message may pose as the marker). */
function trimmedOf(marker: Message | undefined): Trimmed {
  const ours = marker?.metadata?.[CROSSING_KEY] as { historyTrimmed?: Record<string, unknown> } | undefined
  const said = ours?.historyTrimmed
  return { messages: countOf(said?.messages), bytes: countOf(said?.bytes) }
}

function markerOf(task: Task, trimmed: Trimmed): Message {
  const text = `[${trimmed.messages} earlier message(s), ${trimmed.bytes} bytes, were trimmed from this history: it keeps the newest ones within maxHistoryBytes.]`
  return {
    messageId: TRIMMED_ID, contextId: task.contextId, taskId: task.id, role: 2 /* ROLE_AGENT */,
    parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
    metadata: { [CROSSING_KEY]: { historyTrimmed: trimmed } }, extensions: [], referenceTaskIds: [],
  }
}
