import type { Context } from 'cordis'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type { CheckpointStore } from '../durable/journal-store.js'
import type { SubagentStopReason } from '../types.js'

// A continue's claim on its run's record, taken before the new turn starts: the store's `continueRun` compare-and-set
// (ended → running) decides between a continue and a resume by run id (or a continue on another host) of one ended run,
// so that one of them is refused and never two turns of one run id run at once.

/** Runs whose record a continue of this process moved to running, by store: the journal's start record takes them over. */
const claimed = new WeakMap<object, Set<string>>()

/** A continue's claim: `release` puts the record back as it was when the new turn did not start after all. */
export interface ContinueClaim {
  release(): Promise<void>
}

/**
 * Moves run `runId`'s record from ended to running in `ctx.checkpoints` (when loaded and ready) before its new turn
 * starts. Rejects `NOT_SETTLED` when the store has the run in another state (a resume by run id restores it, a continue
 * on another host runs it, or it is parked or interrupted there). Undefined when there is nothing to claim: no store, no
 * record of the run (it was never written or was swept), or a store that failed (logged by the journal's writes as before).
 */
export async function claimContinue(ctx: Context, runId: string, endedAs: SubagentStopReason): Promise<ContinueClaim | undefined> {
  const found = ctx.get('checkpoints' as never) as CheckpointStore | undefined
  if (!found) return undefined
  const store = withoutCallerTracing(found)
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
  const runs = claimed.get(store) ?? claimed.set(store, new Set()).get(store)!
  runs.add(runId)
  return {
    release: async () => {
      if (!runs.delete(runId)) return
      await store.transition(runId, 'running', endedAs === 'closed' ? 'closed' : 'settled').catch(() => false)
    },
  }
}

/** Whether a continue of this process claimed run `runId`'s record in `store` (taken once: the journal's start record of the new turn). */
export function takeContinueClaim(store: CheckpointStore, runId: string): boolean {
  return claimed.get(store)?.delete(runId) ?? false
}
