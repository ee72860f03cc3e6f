import type { SubagentRequest, SubagentRun, SubagentRunInfo } from '../types.js'

// A run's identity: its id (minted once per process) and its info at the hand-over.

/**
 * Run ids only need to be unique among the runs of this process: they key the service's `live`
 * map, events and tool metadata here, and never name anything in another process or on disk
 * (an ACP child gets its own session id). A counter per process is unique there, and far cheaper
 * than a random UUID per run; the start time keeps ids of two processes in one log apart.
 */
const RUN_ID_PREFIX = `run-${Date.now().toString(36)}-`
let runCount = 0

export function nextRunId(): string {
  return RUN_ID_PREFIX + (++runCount).toString(36)
}

type Writable<T> = { -readonly [K in keyof T]: T[K] }

/** A run's info at the hand-over (frozen). */
export function runInfoOf(
  runId: string, provider: string, request: SubagentRequest, run: SubagentRun, depth: number, startedAt: number,
): SubagentRunInfo {
  const childId = typeof run.childId === 'string' ? run.childId : undefined
  const origin = typeof run.origin === 'string' && run.origin ? run.origin.slice(0, 32) : undefined
  // Built by assignment: a literal with a spread in it takes V8's slow path (≈ 0.2–0.7 µs each).
  const fields: Writable<SubagentRunInfo> = { runId, provider, parentId: request.parent.id, depth, startedAt }
  if (request.label !== undefined) fields.label = request.label
  if (childId !== undefined) fields.childId = childId
  if (origin !== undefined) fields.origin = origin
  return Object.freeze(fields)
}
