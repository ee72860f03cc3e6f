import type { Logger } from 'cordis'
import { describeError } from '@cordis-subagents/shared'
import { capDiagnostic } from '../diagnostic.js'
import { SubagentError } from '../errors.js'
import type { EventSink } from '../events.js'
import type { SubagentRequest, SubagentRun } from '../types.js'

// Why a start fails, as its holder and `subagent/start-failed` listeners are told, and cleaning up a
// run never handed over.

/**
 * A start whose signal aborted before a run was handed over: while it waited (no child was started), or once the
 * provider was called (`called`: what it started, a remote task say, is cancelled and disposed when it hands it over).
 */
export function aborted(when: string, called = false): SubagentError {
  return new SubagentError('ABORTED', `The request's signal was aborted ${when}; `
    + (called ? 'the provider had been called, and whatever it started is cancelled and disposed.' : 'no child was started.'))
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
 * Why a provider's settled `start` that is not a run cannot be handed over: its rejection (a `SubagentError` as
 * it is, anything else as `PROVIDER_START_FAILED`), or a fulfilment that is not a run (kept to be discarded).
 */
export function startRefusal(
  providerName: string, outcome: { run: unknown } | { error: unknown },
): { error: SubagentError; leftover?: unknown } {
  if ('error' in outcome) {
    const { error } = outcome
    if (error instanceof SubagentError) return { error }
    return { error: new SubagentError('PROVIDER_START_FAILED',
      capDiagnostic(`Subagent provider "${providerName}" failed to start a child: ${describeError(error)}`), { cause: error }) }
  }
  return {
    error: new SubagentError('PROVIDER_START_FAILED',
      `Subagent provider "${providerName}" fulfilled start() with something that is not a run (needs result, cancel, dispose).`),
    leftover: outcome.run,
  }
}

/** Frees the slots of a start that handed nothing over (`refund`), once what the provider still hands over (`leftover`) is stopped. */
export function abandonStart(log: Logger, providerName: string, leftover: unknown, refund: () => void): void {
  if (leftover === undefined) refund()
  // The start still pending: stop what it hands over late, then free the slot.
  else if (leftover instanceof Promise) leftover.then((late) => discard(log, providerName, late), () => {}).finally(refund)
  // A run we will not hand over: stop it, then free its slot.
  else void discard(log, providerName, leftover).finally(refund)
}

/** Stops and releases a run that will never be handed over. */
async function discard(log: Logger, providerName: string, run: unknown): Promise<void> {
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
