import type { Logger } from 'cordis'
import { headChars } from '@cordis-subagents/shared'
import { isIdleStop } from './limit-stops.js'
import type { SubagentOutcome, SubagentResult, SubagentRunState } from '../types.js'

// A run that ends while it is idle (parked on a question, or interrupted): nothing of the service
// waits on a turn of it then, so the provider reports that end itself (`onIdleEnd`).

/** What an idle end needs of its run (the `Delegation`). */
export interface IdleEndPort {
  readonly id: string
  readonly state: SubagentRunState
  /** Handed over, not ended, not cancelled. */
  readonly open: boolean
  /** Hands what `call` settles with to the run, which settles on a final result. */
  follow(call: () => unknown, failed: string): void
}

/**
 * What the `onIdleEnd` the service gives each provider request does: a final result reported while the run
 * is parked or interrupted (its `maxParkedMs` passed, its process died) ends the run at once, as
 * any final result does: `subagent/end`, the journal's `settled` record (its question cancelled in
 * the store), `pending()` no longer lists it, and every waiter on the run gets it. Ignored while a
 * turn runs (the turn's own result settles the run), after the end, and for a result that is not
 * final (an idle end cannot park).
 */
export function endIdle(run: IdleEndPort, log: Logger, result: SubagentResult): void {
  const { state } = run
  if (!run.open || (state !== 'parked' && state !== 'interrupted')) return
  const stop = (result as Partial<SubagentResult> | undefined)?.stopReason
  if (typeof stop !== 'string' || isIdleStop(stop)) {
    log.warn('run %s: the provider reported an idle end that is not final (%s); ignored', run.id, String(stop))
    return
  }
  endedIdle.add(run)
  run.follow(() => result, `ended run ${run.id} while it was ${state}`)
}

/** Runs whose end came while they were idle (nobody's call waited on a turn of them). */
const endedIdle = new WeakSet<object>()

/**
 * The note a parent that holds a parked child gets in its inbox when the child ended idle (its
 * `maxParkedMs` passed): no call of the parent waits on the child then, so this is how its model
 * learns (a later `subagent_reply` finds no parked child). Undefined for any other end.
 */
export function idleEndNote(run: object & { id: string; info?: { label?: string } }, outcome: SubagentOutcome): string | undefined {
  if (!endedIdle.has(run)) return undefined
  const label = run.info?.label ? ` (${JSON.stringify(headChars(run.info.label, 120))})` : ''
  const why = outcome.diagnostic ? ` ${headChars(outcome.diagnostic, 1000)}` : ''
  return `Subagent ${run.id}${label} ended ${outcome.stopReason} while it waited for your answer; it takes no answer any more.${why}`
}
