import type { SubagentRequest, SubagentRun, SubagentRunInfo } from '../types.js'

// A run's info at the hand-over (its id is minted by admission: admission/admission.ts).

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
