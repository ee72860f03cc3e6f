// Bounded waits for runs' records (the checkpoint journal's `recorded`): every wait has the same
// bound, so they end in the order they began, and one timer serves them all (armed for the oldest
// wait, kept while any waits, unref'd when none does) instead of a timer per outcome.

interface Wait {
  runId: string
  /** When it gives up (ms, performance.now()). */
  at: number
  resolve(): void
}

export class RecordWaits {
  /** Waits in the order they began: the first is the next to give up. */
  private readonly waits = new Set<Wait>()
  private timer: NodeJS.Timeout | undefined

  /** `late` runs for each wait that gave up after `ms`. */
  constructor(private readonly ms: number, private readonly late: (runId: string, ms: number) => void) {}

  /** Resolves once `written` settles, or after the bound (`late` is called then). */
  wait(runId: string, written: Promise<unknown>): Promise<void> {
    return new Promise<void>((resolve) => {
      const wait: Wait = { runId, at: performance.now() + this.ms, resolve }
      if (!this.waits.size) this.arm(this.ms)
      this.waits.add(wait)
      void written.then(() => {
        if (!this.waits.delete(wait)) return
        if (!this.waits.size) this.timer?.unref()
        resolve()
      })
    })
  }

  private arm(ms: number): void {
    // A timer kept from earlier waits is due no later than this wait's bound: its sweep arms the next one.
    if (this.timer) this.timer.ref()
    else this.timer = setTimeout(() => this.sweep(), ms)
  }

  private sweep(): void {
    const now = performance.now()
    for (const wait of this.waits) {
      if (wait.at > now) break
      this.waits.delete(wait)
      this.late(wait.runId, this.ms)
      wait.resolve()
    }
    const first = this.waits.values().next().value
    if (first) this.timer = setTimeout(() => this.sweep(), Math.max(1, first.at - now))
    else this.timer = undefined
  }
}
