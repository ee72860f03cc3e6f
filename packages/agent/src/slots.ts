import { AgentError } from './errors.js'

// One cap of the model gate: `limit` slots, and the calls waiting for one in arrival order (a Set:
// FIFO with O(1) removal on abort). A subclass may close it for a while (`open`), and must then
// `pump` it when it opens again.

interface Waiter {
  grant(): void
}

export class Slots {
  active = 0
  /** The calls waiting, oldest first. */
  private readonly queue = new Set<Waiter>()
  /** Calls waiting ahead of the queue (a retried call), oldest first: two sets keep every insertion O(1). */
  private readonly ahead = new Set<Waiter>()

  constructor(readonly label: string, public limit: number, private readonly maxQueued: number) {}

  get waiting(): number {
    return this.ahead.size + this.queue.size
  }

  /** Whether a call may take a slot now. */
  protected open(): boolean {
    return this.active < this.limit
  }

  /** Called when a call joins the queue (a subclass arms a timer that reopens it). */
  protected queued(): void {}

  /** Called when the queue empties (a subclass disarms that timer). */
  protected drained(): void {}

  /**
   * undefined when a slot was taken at once; else a promise that resolves once one is handed over,
   * rejecting with `signal.reason` on abort (the call leaves the queue at once). `first`: join at
   * the head of the queue (a call the gate retries has waited longest).
   */
  take(signal: AbortSignal, first = false): Promise<void> | undefined {
    if (!this.waiting && this.open()) {
      this.active++
      return undefined
    }
    if (this.waiting >= this.maxQueued) {
      return Promise.reject(new AgentError('MODEL_GATE_FULL',
        `${this.maxQueued} model calls already wait for ${this.label}; raise its cap (maxInFlight), or start fewer runs at once.`))
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        if (!this.ahead.delete(waiter)) this.queue.delete(waiter)
        if (!this.waiting) this.drained()
        reject(signal.reason)
      }
      const waiter: Waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort)
          resolve()
        },
      }
      if (first) this.ahead.add(waiter)
      else this.queue.add(waiter)
      signal.addEventListener('abort', onAbort, { once: true })
      this.queued()
    })
  }

  /** Frees a slot; the oldest waiters get what is open (no barging: a new call queues behind them). */
  free(): void {
    this.active--
    this.pump()
  }

  protected pump(): void {
    if (this.grant(this.ahead) && this.grant(this.queue)) this.drained()
  }

  /** Hands open slots to `waiters` in order; whether all of them got one. */
  private grant(waiters: Set<Waiter>): boolean {
    for (const next of waiters) {
      if (!this.open()) return false
      waiters.delete(next)
      this.active++
      next.grant()
    }
    return true
  }
}
