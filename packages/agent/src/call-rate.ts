import { AgentError } from './errors.js'
import { type WaitBound, watchDeadline } from './slots.js'

// One endpoint's call rate in the model gate (`maxModelCallsPerSecond`): a token bucket one call deep.
// Calls to the endpoint start at least 1/rate s apart, in arrival order, so any second holds at most
// `rate` of them, and nothing is saved up while the endpoint is idle or paused: after a 429/503 pause the
// waiting calls leave one per 1/rate s, never all at once.

interface Waiter {
  resolve(): void
}

export class CallRate {
  /** performance.now() before which no call starts. */
  private next = 0
  private readonly gapMs: number
  private readonly queue = new Set<Waiter>()
  private timer?: ReturnType<typeof setTimeout>

  constructor(readonly key: string, perSecond: number, private readonly maxQueued: number) {
    this.gapMs = 1000 / perSecond
  }

  get waiting(): number {
    return this.queue.size
  }

  /**
   * undefined when the call may start now (its token taken); else a promise that resolves at its turn,
   * rejecting with `signal.reason` on abort (the call leaves the queue at once) or `MODEL_GATE_FULL`.
   * `bound`: the call leaves the queue with `bound.expired()` at its time (slots.ts).
   */
  take(signal: AbortSignal, bound?: WaitBound): Promise<void> | undefined {
    if (!this.queue.size && performance.now() >= this.next) {
      this.spend()
      return undefined
    }
    if (this.queue.size >= this.maxQueued) {
      return Promise.reject(new AgentError('MODEL_GATE_FULL',
        `${this.maxQueued} model calls already wait for the call rate of ${this.key} (maxModelCallsPerSecond); raise it, or start fewer runs at once.`))
    }
    const deadline = bound ? bound.until() : Infinity
    if (bound && deadline <= performance.now()) return Promise.reject(bound.expired())
    return new Promise<void>((resolve, reject) => {
      const leave = () => {
        this.queue.delete(waiter)
        unwatch()
        if (!this.queue.size) this.disarm()
      }
      const onAbort = () => {
        leave()
        reject(signal.reason)
      }
      const waiter: Waiter = {
        resolve: () => {
          unwatch()
          signal.removeEventListener('abort', onAbort)
          resolve()
        },
      }
      this.queue.add(waiter)
      signal.addEventListener('abort', onAbort, { once: true })
      const unwatch = watchDeadline(deadline, () => {
        leave()
        signal.removeEventListener('abort', onAbort)
        reject(bound!.expired())
      })
      if (!this.timer) this.arm()
    })
  }

  /** Whether the bucket holds nothing worth keeping (the gate then forgets it). */
  get idle(): boolean {
    return !this.queue.size && performance.now() >= this.next
  }

  private spend(): void {
    this.next = Math.max(this.next, performance.now()) + this.gapMs
  }

  /** Lets the oldest waiter go when its turn comes (a timer fires early by a fraction of a ms at times: checked again). */
  private arm(): void {
    const left = this.next - performance.now()
    if (left > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined
        this.arm()
      }, Math.max(1, Math.ceil(left)))
      return
    }
    const [first] = this.queue
    if (!first) return
    this.queue.delete(first)
    this.spend()
    first.resolve()
    if (this.queue.size) this.arm()
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
  }
}
