import type { Logger } from 'cordis'
import { isIdleStop } from './outcome.js'
import type { SubagentResult, SubagentRunState } from './types.js'

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
 * The `onIdleEnd` the service gives each provider request: a final result reported while the run
 * is parked or interrupted (its `maxParkedMs` passed, its process died) ends the run at once, as
 * any final result does: `subagent/end`, the journal's `settled` record (its question cancelled in
 * the store), `pending()` no longer lists it, and every waiter on the run gets it. Ignored while a
 * turn runs (the turn's own result settles the run), after the end, and for a result that is not
 * final (an idle end cannot park).
 */
export function idleEnd(run: IdleEndPort, log: Logger): (result: SubagentResult) => void {
  return (result) => {
    const { state } = run
    if (!run.open || (state !== 'parked' && state !== 'interrupted')) return
    const stop = (result as Partial<SubagentResult> | undefined)?.stopReason
    if (typeof stop !== 'string' || isIdleStop(stop)) {
      log.warn('run %s: the provider reported an idle end that is not final (%s); ignored', run.id, String(stop))
      return
    }
    run.follow(() => result, `ended run ${run.id} while it was ${state}`)
  }
}
