import type { ProviderStartRequest, SubagentRequest, SubagentRun, SubagentRunInfo } from '../types.js'

// Calling the provider: its request, its start as a promise, and the run's info at the hand-over
// (its id is minted by admission: admission/admission.ts).

/**
 * The provider's request: `base` (the service's fields) plus every other field of the caller's
 * request as it is, but its `budget` (limits the service turns into the carved budget). A copy
 * loop rather than `{ ...rest, … }`, which V8 runs on a slow path (≈ 0.5–1 µs per start).
 */
export function passOn(request: SubagentRequest, base: ProviderStartRequest): ProviderStartRequest {
  const to = base as unknown as Record<string, unknown>
  const from = request as unknown as Record<string, unknown>
  for (const key of Object.keys(from)) {
    if (key !== 'budget' && !(key in to)) to[key] = from[key]
  }
  return base
}

/** What `call` returns, as a promise: a throw becomes a rejection. */
export function promiseOf(call: () => unknown): Promise<unknown> {
  try {
    return Promise.resolve(call())
  } catch (error) {
    return Promise.reject(error)
  }
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
