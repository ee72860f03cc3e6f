import type { JournalledRun } from '../run/journal-port.js'
import type { CheckpointStore, StoredRunCheckpoint, StoredTaskKey } from './journal-store.js'

// The record-shaping helpers of the checkpoint journal (journal-checkpoints.ts).

/** Longest label stored (the store's id bound). */
const MAX_LABEL = 255

/** What the store's task-key claim hashes: the service's key already covers model, persona and prompt. */
export function taskKeyInput(run: Pick<JournalledRun, 'info' | 'reattachKey'>): StoredTaskKey {
  return { parent: run.info.parentId, provider: run.info.provider, agent: '', prompt: run.reattachKey! }
}

/** A provider's checkpoint may name how to reach its child again: an ACP session, an A2A task. */
export function reattachOf(checkpoint: unknown): Pick<StoredRunCheckpoint, 'sessionId' | 'taskId' | 'agentUrl'> {
  if (!checkpoint || typeof checkpoint !== 'object') return {}
  const fields: Pick<StoredRunCheckpoint, 'sessionId' | 'taskId' | 'agentUrl'> = {}
  const { sessionId, taskId, agentUrl } = checkpoint as Record<string, unknown>
  if (typeof sessionId === 'string' && sessionId && sessionId.length <= MAX_LABEL) fields.sessionId = sessionId
  if (typeof taskId === 'string' && taskId && taskId.length <= MAX_LABEL) fields.taskId = taskId
  if (typeof agentUrl === 'string' && agentUrl && agentUrl.length <= 2048) fields.agentUrl = agentUrl
  return fields
}

export function safeCheckpoint(run: JournalledRun): unknown {
  try {
    return run.checkpoint()
  } catch {
    return undefined
  }
}

/** Cuts a text to `maxBytes` of UTF-8 (a result longer than the store keeps is stored cut, not dropped). */
export function capText(text: string, maxBytes: number): string {
  // Every UTF-16 unit is at most 3 bytes of UTF-8: most texts fit without being encoded.
  if (text.length * 3 <= maxBytes) return text
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length <= maxBytes) return text
  return bytes.subarray(0, maxBytes).toString('utf8').replace(/\uFFFD+$/, '')
}

/** Writes a record without reading it back (a store without `record` is written through `save`). */
export function put(store: CheckpointStore, record: StoredRunCheckpoint, created?: boolean): Promise<void> {
  // A new run's start record is lazy: its write is batched with the run's next one (checkpoints' group commit).
  // An end is logged: with a run log, the outcome waits for its local append, not for the database.
  if (store.record) return store.record(record, { created: !!created, lazy: !!created, logged: !created && ENDS.has(record.state!) })
  return store.save(record).then(ignore)
}

function ignore(): void {}

/** The states a settle writes. */
const ENDS = new Set<string>(['settled', 'closed', 'interrupted'])

/** What a new run's start record takes when the store writes it: the run's checkpoint as its transcript, and its reattach ids. */
export function deferredOf(run: JournalledRun): Pick<StoredRunCheckpoint, 'transcript' | 'sessionId' | 'taskId' | 'agentUrl'> {
  const checkpoint = safeCheckpoint(run)
  return { transcript: checkpoint, ...reattachOf(checkpoint) }
}
