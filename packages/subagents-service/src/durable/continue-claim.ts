import { SubagentError } from '../errors.js'
import type { CheckpointStore } from './journal-store.js'
import type { ContinueClaim } from '../run/journal-port.js'
import type { SubagentStopReason } from '../types.js'

// A continue's claim on its run's record, taken before the new turn starts: the store's `continueRun` compare-and-set
// (ended → running) decides between a continue and a resume by run id (or a continue on another host) of one ended run,
// so that one of them is refused and never two turns of one run id run at once.

/** The continues of this process that claimed their run's record (one journal's): its start record takes each over once. */
export class ContinueClaims {
  private readonly claimed = new Set<string>()

  /**
   * Moves run `runId`'s record from ended to running in `store` before its new turn starts. Rejects `NOT_SETTLED` when
   * the store has the run in another state (a resume by run id restores it, a continue on another host runs it, or it is
   * parked or interrupted there). Undefined when there is nothing to claim: no store, no record of the run (it was never
   * written or was swept), or a store that failed (logged by the journal's writes as before).
   */
  async claim(store: CheckpointStore | undefined, runId: string, endedAs: SubagentStopReason): Promise<ContinueClaim | undefined> {
    if (!store) return undefined
    let moved: boolean
    try {
      moved = await store.continueRun(runId)
    } catch {
      return undefined
    }
    if (!moved) {
      const stored = await store.load(runId).catch(() => undefined)
      if (!stored) return undefined
      throw new SubagentError('NOT_SETTLED', `Run ${runId} is ${stored.state} in the checkpoint store${stored.host !== store.host
        ? ` (host ${stored.host})` : ''}: a resume by run id or another continue is running a turn of it. Wait for that outcome `
        + '(ctx.subagents.result), then continue it.')
    }
    this.claimed.add(runId)
    return {
      release: async () => {
        if (!this.claimed.delete(runId)) return
        await store.transition(runId, 'running', endedAs === 'closed' ? 'closed' : 'settled').catch(() => false)
      },
    }
  }

  /** Whether a continue claimed run `runId`'s record (taken once: the journal's start record of the new turn). */
  take(runId: string): boolean { return this.claimed.delete(runId) }
}
