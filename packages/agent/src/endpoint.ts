import { MAX_TIMER_MS } from '@cordis-subagents/shared'
import type { RateLimitInfo, RateLimitSettings } from './rate-limit.js'
import { Slots } from './slots.js'

// One model endpoint's share of the gate, once it has been refused for its rate: a pause every call
// to it waits out (the announced time plus jitter, or an exponential default), and a concurrency
// that halves on a refusal and grows back by one per `recoverAfter` successes (AIMD) until it
// passes what was in flight when the trouble began, when the endpoint is unlimited again. A call waiting
// here under its wait budget (`rateLimit.maxWaitMs`, see backoff-wait.ts) fails at once when a pause
// would carry it to the budget or past it, and else when the budget runs out (slots.ts).

export class Endpoint extends Slots {
  /** performance.now() before which no call starts (monotonic: a step of the OS clock neither ends nor stretches it); 0: not paused. */
  private pausedUntil = 0
  private timer?: ReturnType<typeof setTimeout>
  /** Bumped at every decrease: a refusal of a call sent before the last decrease is the same congestion, not a new one. */
  epoch = 0
  /** The last refusal, as the adapter reported it: named to a call that fails here before it was ever refused. */
  lastRefusal?: RateLimitInfo
  /** Refusals in a row (without a success between): the exponent of the default pause. */
  private strikes = 0
  private successes = 0
  /** Calls in flight when the first decrease came: once the limit grows back to it the endpoint is unlimited again. */
  private peak = 0

  /** `active`: the calls already in flight to it, which it takes over. */
  constructor(readonly key: string, maxQueued: number, private readonly settings: RateLimitSettings, active: number) {
    super(`the rate-limited endpoint ${key}`, Infinity, maxQueued)
    this.active = active
  }

  /** Whether the endpoint holds no state worth keeping (the gate then forgets it). */
  get idle(): boolean {
    return !this.active && !this.waiting && this.limit === Infinity && !this.pauseLeft()
  }

  /** Ms until the pause ends, a fraction of one too (0: not paused). */
  pauseLeft(now = performance.now()): number {
    return this.pausedUntil > now ? this.pausedUntil - now : 0
  }

  protected override opensAt(): number {
    return this.pausedUntil
  }

  protected override open(): boolean {
    return this.active < this.limit && !this.pauseLeft()
  }

  protected override queued(): void {
    this.arm()
  }

  protected override drained(): void {
    this.disarm()
  }

  /**
   * A call sent at `epoch` was refused: lower the concurrency (once per congestion: a call sent
   * before the last decrease does not lower it again) and pause the endpoint. Call it while the
   * refused call still holds its slot. Returns the pause now in force, in ms. A waiting call whose
   * wait budget ends by the end of a lengthened pause fails at once.
   */
  refused(epoch: number, refusal: RateLimitInfo): number {
    const { settings } = this
    const { retryAfterMs } = refusal
    this.lastRefusal = refusal
    if (epoch === this.epoch) {
      this.epoch++
      this.strikes++
      this.successes = 0
      if (this.limit === Infinity) {
        this.peak = this.active
        this.limit = Math.max(1, Math.floor(this.active / 2))
      } else {
        this.limit = Math.max(1, Math.floor(this.limit / 2))
      }
    }
    const wait = retryAfterMs !== undefined
      ? Math.min(retryAfterMs, settings.maxRetryAfterMs)
      : Math.min(settings.backoffMs * 2 ** Math.min(this.strikes - 1, 30), settings.maxRetryAfterMs)
    // At most the longest timer Node honours (a longer one fires at once, and the pause would re-arm every millisecond).
    const pause = Math.min(wait + Math.floor(Math.random() * Math.min(settings.maxJitterMs, wait / 5)), MAX_TIMER_MS)
    const now = performance.now()
    if (now + pause > this.pausedUntil) {
      this.pausedUntil = now + pause
      if (this.waiting) this.expireBy(this.pausedUntil)
      if (this.waiting) this.arm()
      return pause
    }
    return Math.ceil(this.pauseLeft(now))
  }

  /**
   * A call sent at `epoch` succeeded. One sent since the last decrease ends the refusals in a row
   * and counts towards growing a lowered concurrency back (one sent before says nothing of it).
   */
  succeeded(epoch: number): void {
    if (epoch !== this.epoch) return
    this.strikes = 0
    if (this.limit === Infinity || ++this.successes < this.settings.recoverAfter) return
    this.successes = 0
    this.limit++
    if (this.limit >= this.peak) this.limit = Infinity
    this.pump()
  }

  /** The pause timer runs only while calls wait (none lingers after the last one left). */
  private arm(): void {
    const left = this.pauseLeft()
    if (!left) {
      // The pause ended since the caller found it closed: open it now (no timer would).
      this.pausedUntil = 0
      return this.pump()
    }
    if (this.timer) clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (this.pauseLeft()) return this.arm()
      this.pausedUntil = 0
      this.pump()
    }, left)
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
  }
}
