import type { AbortScope } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type { StoredRun } from './journal-store.js'

// Who in this process is continuing a stored run right now, so a resume by run id and a re-run
// that reattaches by task key never restore it both: the one that comes second waits for the
// first (a re-run) or is refused (a resume).

/** A resume restoring the run (held until the restored run ends), or a re-run taking it over as run `successor`. */
export type Hold = { by: 'resume' } | { by: 'take-over'; successor: string }

export class StoredRunHolds {
  private readonly held = new Map<string, { hold: Hold; done: Promise<void>; release: () => void }>()

  get(runId: string): Hold | undefined {
    return this.held.get(runId)?.hold
  }

  /** Holds `runId` (it must not be held); the function returned lets it go (idempotent). */
  take(runId: string, hold: Hold): () => void {
    let release!: () => void
    const done = new Promise<void>((resolve) => { release = resolve })
    const entry = { hold, done, release }
    this.held.set(runId, entry)
    return () => {
      if (this.held.get(runId) === entry) this.held.delete(runId)
      entry.release()
    }
  }

  /** Fulfils once `runId` is let go (at once when it is not held); rejects `ABORTED` when `scope` aborts first. */
  released(runId: string, scope?: AbortScope): Promise<void> {
    const entry = this.held.get(runId)
    if (!entry) return Promise.resolve()
    if (!scope) return entry.done
    return new Promise<void>((resolve, reject) => {
      const stop = scope.onAbort(() => reject(new SubagentError('ABORTED',
        `The re-run was cancelled while it waited for run ${runId}, which this host is continuing; nothing was started.`)))
      void entry.done.then(() => {
        stop()
        resolve()
      })
    })
  }
}

/** Why a resume of run `runId` is refused while `hold` holds it. */
export function heldError(runId: string, hold: Hold): SubagentError {
  if (hold.by === 'take-over') {
    return new SubagentError('NOT_PARKED', `Run ${runId} is being taken over by run ${hold.successor} (a re-run of its task reattached `
      + `it by task key); answer run ${hold.successor} once it asks (ctx.subagents.pending()).`)
  }
  return new SubagentError('NOT_PARKED', `Run ${runId} is being restored by another resume; wait for its outcome.`)
}

const TAKEN_OVER = /^continued as run (\S+) \(reattached by task key\)$/

/** The result a run taken over by a re-run is closed with: it names the run that continues its task. */
export function takenOverNote(successor: string): string {
  return `continued as run ${successor} (reattached by task key)`
}

/** The run that took stored run `stored` over (it is closed with `takenOverNote`), if one did. */
export function successorOf(stored: StoredRun): string | undefined {
  if (stored.state !== 'closed' || stored.stopReason !== 'closed') return undefined
  return TAKEN_OVER.exec(stored.result ?? '')?.[1]
}

/** A run taken over never runs again: its task goes on as `successor`, which gets the answers. */
export function takenOverError(runId: string, successor: string): SubagentError {
  return new SubagentError('NOT_PARKED', `Run ${runId} was taken over by run ${successor} (a re-run of its task reattached it by task `
    + `key) and never runs again; answer run ${successor} instead (ctx.subagents.resume('${successor}', answer)).`)
}
