import type { Logger } from 'cordis'
import { describeError } from '@cordis-subagents/shared'

/**
 * The teardowns (close stdin, exitGrace, SIGTERM/SIGKILL of the group, the wait) that go on
 * after a run was handed back at the end of its turn. One per provider: its `stop()` awaits
 * every one, so an unload, a reload or `ctx.stop()` leaves no process behind. After `close()`
 * nobody is left to wait, so a run that ends later waits for its own teardown in `dispose()`.
 */
export class Reaps {
  private readonly pending = new Set<Promise<void>>()
  private closed = false

  constructor(private readonly logger: Logger, private readonly providerName: string) {}

  /** True once the provider stopped: a teardown must then be awaited by its run's dispose. */
  get stopped(): boolean {
    return this.closed
  }

  /** Pending teardowns (for tests and the bench). */
  get size(): number {
    return this.pending.size
  }

  /** Keeps `reap` until it settles; a failure is logged, never thrown at anyone. */
  track(reap: Promise<void>): void {
    const tracked = reap.catch((error) => {
      this.logger.warn('%s: stopping an agent process in the background failed: %s', this.providerName, describeError(error))
    }).finally(() => this.pending.delete(tracked))
    this.pending.add(tracked)
  }

  /** Resolves once every teardown pending now, and any tracked meanwhile, is done. */
  async settled(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending])
  }

  /** The provider stops: wait for every pending teardown. */
  close(): Promise<void> {
    this.closed = true
    return this.settled()
  }
}
