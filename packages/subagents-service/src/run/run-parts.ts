import type { Logger } from 'cordis'
import { describeError } from '@cordis-subagents/shared'
import { capDiagnostic } from '../diagnostic.js'
import { SubagentError } from '../errors.js'
import type { SubagentEvents } from '../events.js'
import type { ProviderStartRequest, SubagentRequest, SubagentRun, SubagentRunInfo } from '../types.js'
import { isRun } from '../validate.js'

/** What `call` returns, as a promise: a throw becomes a rejection. */
export function promiseOf(call: () => unknown): Promise<unknown> {
  try {
    return Promise.resolve(call())
  } catch (error) {
    return Promise.reject(error)
  }
}

/** Stops and releases a run that will never be handed over. */
export async function discard(log: Logger, providerName: string, run: unknown): Promise<void> {
  if (!run || typeof run !== 'object') return
  const target = run as Partial<SubagentRun>
  try {
    // Nobody will read this result; keep a late rejection from going unhandled.
    Promise.resolve(target.result).catch(() => {})
    if (typeof target.cancel === 'function') target.cancel('The start was abandoned.')
    if (typeof target.dispose === 'function') await target.dispose()
  } catch (error) {
    log.warn('provider %s: cleaning up an abandoned run failed: %s', providerName, describeError(error))
  }
}


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

export function aborted(when: string): SubagentError {
  return new SubagentError('ABORTED', `The request's signal was aborted ${when}; no child was started.`)
}

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

/** Tells `subagent/start-failed` listeners (the provider was called; no run came of it), then gives the error back. */
export function startFailed(
  events: SubagentEvents, runId: string, provider: string, request: SubagentRequest, error: SubagentError,
): SubagentError {
  if (events.has('subagent/start-failed')) {
    events.emit('subagent/start-failed', {
      runId, provider, parentId: request.parent.id, error,
      ...request.label === undefined ? {} : { label: request.label },
    })
  }
  return error
}

/**
 * Why a provider's settled `start` cannot be handed over: its rejection (a `SubagentError` as it is,
 * anything else as `PROVIDER_START_FAILED`), or a fulfilment that is not a run (kept to be
 * discarded); undefined for a run.
 */
export function startRefusal(
  providerName: string, outcome: { run: unknown } | { error: unknown },
): { error: SubagentError; leftover?: unknown } | undefined {
  if ('error' in outcome) {
    const { error } = outcome
    if (error instanceof SubagentError) return { error }
    return { error: new SubagentError('PROVIDER_START_FAILED',
      capDiagnostic(`Subagent provider "${providerName}" failed to start a child: ${describeError(error)}`), { cause: error }) }
  }
  if (isRun(outcome.run)) return undefined
  return {
    error: new SubagentError('PROVIDER_START_FAILED',
      `Subagent provider "${providerName}" fulfilled start() with something that is not a run (needs result, cancel, dispose).`),
    leftover: outcome.run,
  }
}
