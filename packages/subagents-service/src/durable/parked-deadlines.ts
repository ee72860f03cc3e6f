import type { PendingQuestion } from '@cordis-subagents/shared'

// A stored parked run of an earlier start waits no longer than its live run would have: its question's `expiresAt` (the
// deadline its provider set at the park, kept with the question in the store). Without it a restarted host listed such
// a run in `pending()`, and a resume ran it, however long ago it stopped waiting.

/**
 * Longest the timer waits before it reads the wall clock again. A deadline is wall-clock time (it crosses restarts) but a
 * timer runs on the monotonic clock: after a step forward of the wall clock (a VM resumed, an NTP correction) a deadline
 * passed is seen within this, not once the whole delay armed before the step ran out. A step back moves it later, as it should.
 */
const RECHECK_MS = 60_000
/** How soon a deadline is looked at again while a resume or a re-run holds its run (they may put it back parked). */
export const HELD_RETRY_MS = 1000

/** Whether `question` stopped waiting by `now`. */
export function pastDeadline(question: PendingQuestion | undefined, now = Date.now()): boolean {
  const at = question?.expiresAt
  return typeof at === 'number' && Number.isFinite(at) && at <= now
}

/** The deadlines of the stored parked runs `pending()` lists, oldest first, behind one timer; `end` runs at each. */
export class StoredParkDeadlines {
  private due: { runId: string; at: number; question: PendingQuestion }[] = []
  private timer?: NodeJS.Timeout
  private closed = false

  constructor(private readonly end: (runId: string, question: PendingQuestion) => void, private readonly recheckMs = RECHECK_MS) {}

  /** Ends run `runId` at `at` (its question's `expiresAt`, unless given); nothing for a question without one. */
  watch(runId: string, question: PendingQuestion, at = question.expiresAt): void {
    if (typeof at !== 'number' || !Number.isFinite(at) || this.closed) return
    this.forget(runId)
    const index = this.due.findIndex((entry) => entry.at > at)
    this.due.splice(index < 0 ? this.due.length : index, 0, { runId, at, question })
    if (this.due[0]!.runId === runId) this.arm()
  }

  /** Run `runId` no longer waits here (a resume took it, or it ended). */
  forget(runId: string): void {
    const index = this.due.findIndex((entry) => entry.runId === runId)
    if (index >= 0) this.due.splice(index, 1)
  }

  /** The journal goes (its store was unloaded): no deadline runs after. */
  close(): void {
    this.closed = true
    this.due = []
    clearTimeout(this.timer)
  }

  private arm(): void {
    clearTimeout(this.timer)
    const next = this.due[0]
    if (!next) return
    this.timer = setTimeout(() => this.fire(), Math.min(this.recheckMs, Math.max(0, next.at - Date.now())))
    this.timer.unref()
  }

  private fire(): void {
    const now = Date.now()
    while (this.due.length && this.due[0]!.at <= now) {
      const { runId, question } = this.due.shift()!
      this.end(runId, question)
    }
    this.arm()
  }
}
