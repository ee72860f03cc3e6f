/**
 * Re-lists a server's tools when it says they changed, coalesced: at most one listing in flight
 * and one pending, started at least `interval` ms after the previous one ended. A burst of
 * `tools/list_changed` notifications costs at most two listings, and a steady stream of them at
 * most one listing per `interval`.
 */
export class Relister {
  private running = false
  private pending = false
  private timer?: NodeJS.Timeout
  /** `performance.now()` when the previous listing ended (none yet: -Infinity); in-process time, whatever the wall clock does. */
  private lastEnd = -Infinity
  private closed = false

  constructor(private readonly list: () => Promise<void>, private readonly interval: number) {}

  /** The first listing (at load): runs now and resolves when it is done. */
  async first(): Promise<void> {
    await this.run()
  }

  /** The server said its tools changed. */
  changed() {
    if (this.closed) return
    if (this.running) {
      this.pending = true
      return
    }
    if (this.timer) return // the scheduled listing starts after this notification
    const wait = this.lastEnd + this.interval - performance.now()
    if (wait <= 0) return void this.run()
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.run()
    }, wait)
    this.timer.unref()
  }

  close() {
    this.closed = true
    this.pending = false
    clearTimeout(this.timer)
    this.timer = undefined
  }

  private async run(): Promise<void> {
    if (this.closed) return
    this.running = true
    try {
      await this.list()
    } finally {
      this.running = false
      this.lastEnd = performance.now()
      if (this.pending) {
        this.pending = false
        this.changed()
      }
    }
  }
}
