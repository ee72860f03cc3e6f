import type { Logger } from 'cordis'
import { DeadlineQueue } from '@cordis-subagents/shared'

// Bounded waits for runs' records (the checkpoint journal's `recorded`): every wait has the same
// bound, so one `DeadlineQueue` (one timer, kept while any waits, unref'd when none does) serves
// them all instead of a timer per outcome.

/** Longest a run's outcome waits for its record before its holders get it anyway (a hung store; logged). */
export const RECORD_WAIT_MS = 5000
/** Longest a host's exit (a signal to a cordis or Koishi app: its `exit` event) waits for queued writes. */
export const EXIT_FLUSH_MS = 5000

export class RecordWaits {
  private readonly deadlines: DeadlineQueue

  /** `late` runs for each wait that gave up after `ms`. */
  constructor(private readonly ms: number, private readonly late: (runId: string, ms: number) => void) {
    this.deadlines = new DeadlineQueue(ms)
  }

  /** Resolves once `written` settles, or after the bound (`late` is called then). */
  wait(runId: string, written: Promise<unknown>): Promise<void> {
    return new Promise<void>((resolve) => {
      const giveUp = this.deadlines.add(() => {
        this.late(runId, this.ms)
        resolve()
      })
      void written.then(() => {
        giveUp()
        resolve()
      })
    })
  }
}

/** Resolves once `journal`'s queued writes ran, or after `ms` (logged). */
export async function flushWithin(journal: { flush(): Promise<void> }, ms: number, log: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>((resolve) => { timer = setTimeout(() => resolve('late'), ms) })
  try {
    if (await Promise.race([journal.flush(), late]) === 'late') {
      log.warn('exit: checkpoint writes still queued after %d ms were not waited for', ms)
    }
  } finally {
    clearTimeout(timer)
  }
}
