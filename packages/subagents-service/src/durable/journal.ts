import type { Logger } from 'cordis'
import { describeError } from '@cordis-subagents/shared'
import type { JournalNote, RunJournal } from '../run/journal-port.js'

// How the service calls a journal that a durable store put in place (`useJournal`): each hook guarded.
// Without one, the run's notes go nowhere and this module is never entered (see service.ts).

/** Calls one hook of the journal `current()` gives; a hook that throws is logged and ignored. */
export function noteIn(current: () => RunJournal, log: Logger): JournalNote {
  return (hook, ...args) => {
    try {
      const journal = current()
      // An optional hook a journal does not have is skipped.
      const call = journal[hook] as ((...a: unknown[]) => void) | undefined
      if (call) call.apply(journal, args)
    } catch (error) {
      log.warn('journal hook %s failed (ignored): %s', hook, describeError(error))
    }
  }
}

/** Calls `then` once the journal `current()` gives has recorded a run's queued writes; at once when it has none queued. */
export function afterRecordedIn(current: () => RunJournal): (runId: string, then: () => void) => void {
  return (runId, then) => {
    let recorded: Promise<void> | undefined
    try {
      recorded = current().recorded?.(runId)
    } catch {
      recorded = undefined
    }
    if (recorded) void recorded.then(then, then)
    else then()
  }
}
