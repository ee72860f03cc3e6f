import { MAX_TIMER_MS } from '@cordis-subagents/shared'
import { AgentError } from './errors.js'

// One cap of the model gate: `limit` slots, and the calls waiting for one in arrival order (a Set:
// FIFO with O(1) removal on abort). A subclass may close it for a while (`open`), and must then
// `pump` it when it opens again. A call may wait under a bound (`WaitBound`: the gate's
// `rateLimit.maxWaitMs`); its timer is armed only once the call joins the queue.

/** How long a call may wait in a queue, and what it fails with past that. */
export interface WaitBound {
  /** Called as the call joins a queue: the performance.now() at which it must have left it. */
  until(): number
  /** The error the call fails with once it reaches that time still waiting. */
  expired(): Error
}

const NO_WATCH = () => {}

/**
 * Runs `expire` once performance.now() reaches `deadline` (a timer may fire a fraction of a ms early: it checks
 * again), never before the next macrotask; returns what cancels it. An infinite deadline arms nothing.
 */
export function watchDeadline(deadline: number, expire: () => void): () => void {
  if (deadline === Infinity) return NO_WATCH
  let timer: ReturnType<typeof setTimeout>
  const arm = () => {
    timer = setTimeout(watch, Math.min(Math.max(1, Math.ceil(deadline - performance.now())), MAX_TIMER_MS))
  }
  const watch = () => {
    if (deadline > performance.now()) arm()
    else expire()
  }
  arm()
  return () => clearTimeout(timer)
}

interface Waiter {
  grant(): void
  /** performance.now() by which it must have left (Infinity: unbounded). */
  deadline: number
  /** Takes it out of the queue with its bound's error. */
  expire(): void
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

  /** performance.now() before which the cap does not open (0: none known; an endpoint's pause). */
  protected opensAt(): number {
    return 0
  }

  /**
   * undefined when a slot was taken at once; else a promise that resolves once one is handed over,
   * rejecting with `signal.reason` on abort (the call leaves the queue at once). `first`: join at
   * the head of the queue (a call the gate retries has waited longest). `bound`: the call leaves the
   * queue with `bound.expired()` at its time, or at once when the cap does not open before it.
   */
  take(signal: AbortSignal, first = false, bound?: WaitBound): Promise<void> | undefined {
    if (!this.waiting && this.open()) {
      this.active++
      return undefined
    }
    if (this.waiting >= this.maxQueued) {
      return Promise.reject(new AgentError('MODEL_GATE_FULL',
        `${this.maxQueued} model calls already wait for ${this.label}; raise its cap (maxInFlight), or start fewer runs at once.`))
    }
    let deadline = Infinity
    if (bound) {
      deadline = bound.until()
      if (deadline <= Math.max(performance.now(), this.opensAt())) return Promise.reject(bound.expired())
    }
    return new Promise<void>((resolve, reject) => {
      let unwatch = NO_WATCH
      const leave = () => {
        if (!this.ahead.delete(waiter)) this.queue.delete(waiter)
        unwatch()
        if (!this.waiting) this.drained()
      }
      const onAbort = () => {
        leave()
        reject(signal.reason)
      }
      const waiter: Waiter = {
        deadline,
        grant: () => {
          unwatch()
          signal.removeEventListener('abort', onAbort)
          resolve()
        },
        expire: () => {
          leave()
          signal.removeEventListener('abort', onAbort)
          reject(bound!.expired())
        },
      }
      if (first) this.ahead.add(waiter)
      else this.queue.add(waiter)
      signal.addEventListener('abort', onAbort, { once: true })
      if (bound) unwatch = watchDeadline(deadline, waiter.expire)
      this.queued()
    })
  }

  /** Fails at once every waiter whose bound comes by `instant` (the cap will not open before it). */
  protected expireBy(instant: number): void {
    for (const waiters of [this.ahead, this.queue]) {
      for (const waiter of waiters) if (waiter.deadline <= instant) waiter.expire()
    }
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
