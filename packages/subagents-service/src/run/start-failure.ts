import type { Logger } from 'cordis'
import { describeError } from '@cordis-subagents/shared'
import { capDiagnostic } from '../diagnostic.js'
import { SubagentError } from '../errors.js'
import type { EventSink } from '../events.js'
import type { SubagentRequest, SubagentRun } from '../types.js'
import { isRun } from './provider-io.js'

// Why a start fails, as its holder and `subagent/start-failed` listeners are told, and cleaning up a
// run never handed over.

/** A start whose signal aborted before a child ran (while it waited, or before the hand-over). */
export function aborted(when: string): SubagentError {
  return new SubagentError('ABORTED', `The request's signal was aborted ${when}; no child was started.`)
}

/** Tells `subagent/start-failed` listeners (the provider was called; no run came of it), then gives the error back. */
export function startFailed(
  events: EventSink, runId: string, provider: string, request: SubagentRequest, error: SubagentError,
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
