import type { Endpoint } from './endpoint.js'
import { type RateLimitInfo, RateLimitedError, type RateLimitSettings } from './rate-limit.js'
import type { WaitBound } from './slots.js'

// One gated call's wait on its endpoint's backoff (what `usage.rateLimitWaitMs` reports), and the bound
// `rateLimit.maxWaitMs` puts on all of it: from each refusal to the next attempt, and in the queue of an
// endpoint under backoff before the first. Made only for a call that meets the backoff (a refusal, or an
// endpoint with state); its deadline arms a timer only while the call waits in a queue (slots.ts, call-rate.ts).

export class BackoffWait implements WaitBound {
  /** Attempts made (refused ones). */
  attempts = 0
  /** Ms waited on the backoff before `from`. */
  waited = 0
  /** performance.now() since which the call waits on the backoff (its last refusal, or its turn in the endpoint's queue). */
  from?: number
  /** Its own last refusal. */
  refusal?: RateLimitInfo
  /** The endpoint it waits on (for the pause left and, before any refusal of its own, the endpoint's last one). */
  endpoint?: Endpoint

  constructor(private readonly settings: RateLimitSettings) {}

  /** The call was refused at `at` (its attempt counted): its wait runs from there. */
  refused(refusal: RateLimitInfo, at: number): void {
    this.refusal = refusal
    this.from = at
  }

  /** The call joins a queue: its wait runs from now, if it did not already (after a refusal); the instant its budget ends. */
  until(): number {
    this.from ??= performance.now()
    return this.from + this.settings.maxWaitMs - this.waited
  }

  /** The wait ends at `at` (its turn came, or it attempts). */
  stop(at = performance.now()): void {
    if (this.from === undefined) return
    this.waited += at - this.from
    this.from = undefined
  }

  /** Whether the call has waited past its budget (check it as the wait ends, before the attempt). */
  get over(): boolean {
    return this.waited > this.settings.maxWaitMs
  }

  /** The call leaves a queue past its budget: the `RATE_LIMITED` error it fails with. */
  expired(): RateLimitedError {
    const waited = this.waited + (this.from === undefined ? 0 : performance.now() - this.from)
    const left = this.endpoint?.pauseLeft() ?? 0
    const next = left ? `the next wait is ${Math.ceil(left)} ms` : 'the next wait is its turn in a queue (the endpoint\'s lowered concurrency, a cap or the call rate)'
    const budget = `Its wait budget is spent (rateLimit.maxWaitMs ${this.settings.maxWaitMs} ms)`
    if (this.refusal) return spent(this.refusal, this.attempts, waited, next, budget, undefined)
    const refusal = this.endpoint?.lastRefusal ?? { endpoint: this.endpoint?.key ?? 'an unnamed endpoint' }
    const waitedMs = Math.round(waited)
    return new RateLimitedError('RATE_LIMITED',
      `RATE_LIMITED: the model endpoint ${refusal.endpoint} is held back after refusing calls for their rate${status(refusal)}; ` +
      `this call made 0 attempts and waited ${waitedMs} ms on the endpoint's backoff; ${next}. ${budget}: ${ADVICE}`,
      { ...refusal, attempts: 0, waitedMs })
  }

  /** The call was just refused and its next pause is `pause` ms: the error when that spends its budget, else undefined. */
  spentBy(pause: number, cause: unknown): RateLimitedError | undefined {
    const { settings } = this
    if (this.attempts <= settings.maxRetries && this.waited + pause < settings.maxWaitMs) return undefined
    const budget = `Its retry budget is spent (rateLimit.maxRetries ${settings.maxRetries}, rateLimit.maxWaitMs ${settings.maxWaitMs} ms)`
    return spent(this.refusal!, this.attempts, this.waited, `the next wait is ${pause} ms`, budget, cause)
  }
}

const ADVICE = 'start fewer calls at once (maxModelCallsInFlight), or raise the budget.'

const status = (refusal: RateLimitInfo) => refusal.status === undefined ? '' : ` (HTTP ${refusal.status})`

function spent(refusal: RateLimitInfo, attempts: number, waited: number, next: string, budget: string, cause: unknown): RateLimitedError {
  const waitedMs = Math.round(waited)
  return new RateLimitedError('RATE_LIMITED',
    `RATE_LIMITED: the model endpoint ${refusal.endpoint} refused ${attempts} attempt${attempts === 1 ? '' : 's'} of this call for its rate${status(refusal)}; ` +
    `the call waited ${waitedMs} ms on the endpoint's backoff and ${next}. ${budget}: ${ADVICE}`,
    { ...refusal, attempts, waitedMs }, cause === undefined ? undefined : { cause })
}
