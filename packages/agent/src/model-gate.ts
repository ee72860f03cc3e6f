import { Endpoint } from './endpoint.js'
import { CallRate } from './call-rate.js'
import { BackoffWait } from './backoff-wait.js'
import { type RateLimitConfig, rateLimitOf, type RateLimitSettings, rateLimitSettings } from './rate-limit.js'
import { Slots, type WaitBound } from './slots.js'
import { CountedGate } from './seam.js'
import type { GateTarget } from './types.js'
import type { GenerateRequest, GenerateResponse } from './types.js'

// The process-wide gate around the model call only: a cap on calls in flight across every root
// run of a runtime, one per model, and per endpoint the shared backoff after a 429/503 (a pause
// and a lowered concurrency every call to that endpoint waits on, see endpoint.ts). A run waits
// here with its step already reserved; nothing else (tools, delegations, a parent waiting for its
// child) holds a slot, so a tree cannot deadlock on it: a slot is always held by a call that ends
// without needing another slot. Slots are taken in one order, endpoint → model → process.
// With `maxModelCallsPerSecond`, each endpoint also has a call rate (call-rate.ts): a call takes its
// token last, right before it is sent, so the endpoint sees at most that many calls start in any second,
// and after a pause the waiting calls leave paced. A call with no cap configured to an endpoint never
// refused is only counted: seam.ts (`CountedGate`) makes it; every other call, and a counted call that
// fails, goes on here.

export interface ModelGateOptions {
  /** Model calls in flight across all models; undefined: no cap of its own. */
  maxInFlight?: number
  /** Per model name: calls of that model in flight. */
  models?: Readonly<Record<string, { maxInFlight?: number } | undefined>>
  /** Calls that may wait at one cap before another is refused (`MODEL_GATE_FULL`). */
  maxQueued: number
  /** The shared backoff after 429/503 (on unless `enabled: false`). */
  rateLimit?: RateLimitConfig
  /** Per endpoint: calls that start in any second (`maxModelCallsPerSecond`); undefined: no rate of its own. */
  maxPerSecond?: number
}

/** An endpoint's state, for tests and status displays. */
export interface EndpointStatus {
  /** Calls it may have in flight now (Infinity: not lowered). */
  limit: number
  active: number
  waiting: number
  /** Ms until its pause ends (0: not paused). */
  pausedMs: number
}

const NO_CAPS = () => {}

export class ModelGate extends CountedGate {
  private readonly global?: Slots
  private readonly perModel = new Map<string, Slots>()
  private readonly rateLimit?: RateLimitSettings
  private readonly maxQueued: number
  private readonly perSecond?: number
  /** Call rates by endpoint key (with `maxPerSecond`); an idle one is dropped when there are many. */
  private readonly rates = new Map<string, CallRate>()

  private constructor(options: ModelGateOptions) {
    super()
    this.maxQueued = options.maxQueued
    this.perSecond = options.maxPerSecond
    if (options.maxInFlight !== undefined) {
      this.global = new Slots('the process-wide cap (maxModelCallsInFlight)', options.maxInFlight, options.maxQueued)
    }
    for (const [name, caps] of Object.entries(options.models ?? {})) {
      if (caps?.maxInFlight !== undefined) {
        this.perModel.set(name, new Slots(`model "${name}" (models.${name}.maxInFlight)`, caps.maxInFlight, options.maxQueued))
      }
    }
    const settings = rateLimitSettings(options.rateLimit)
    if (settings.enabled) this.rateLimit = settings
    this.countOnly = !!this.rateLimit && !this.global && !this.perModel.size && this.perSecond === undefined
  }

  /** A gate, or undefined when no cap is configured and the shared backoff is off (then a model call pays one check). */
  static create(options: ModelGateOptions): ModelGate | undefined {
    const gate = new ModelGate(options)
    return gate.global || gate.perModel.size || gate.rateLimit || gate.perSecond !== undefined ? gate : undefined
  }

  /** Calls of `model` (or of all models) in flight now under a cap; for tests and status displays. */
  inFlight(model?: string): number {
    return (model === undefined ? this.global : this.perModel.get(model))?.active ?? 0
  }

  /** The state of the endpoint `key` (see `ChatModel.rateLimitKey`), when the gate holds any. */
  endpoint(key: string): EndpointStatus | undefined {
    const endpoint = this.endpoints.get(key)
    if (!endpoint) return undefined
    return { limit: endpoint.limit, active: endpoint.active, waiting: endpoint.waiting, pausedMs: Math.ceil(endpoint.pauseLeft()) }
  }

  /** Calls waiting for their turn at the call rate of the endpoint `key` (`maxModelCallsPerSecond`), when it has one. */
  waitingForRate(key: string): number | undefined {
    return this.rates.get(key)?.waiting
  }

  /**
   * One model call through the gate (`generate`, when it is more than counted): waits for its
   * endpoint (pause, lowered concurrency), then for the model's cap and the process-wide one,
   * calls the model, and frees every slot when the call settles. A `RATE_LIMITED` refusal pauses
   * the endpoint for every caller and the call waits at the head of its queue for another
   * attempt, until its retry budget is spent (then it throws `RateLimitedError`); its whole wait on
   * the backoff is bounded by `maxWaitMs` (backoff-wait.ts), checked again before each attempt. The
   * wait is added to the response's `usage.rateLimitWaitMs`. Rejects with `signal.reason` the moment the
   * signal aborts while it waits, `MODEL_GATE_FULL` when a queue is full, and whatever else the
   * model throws. `from`: a counted call's first attempt, refused.
   */
  protected override async gated(
    target: GateTarget, request: GenerateRequest, key?: string, from?: BackoffWait,
  ): Promise<GenerateResponse> {
    const { signal } = request
    if (signal.aborted) throw signal.reason
    const settings = this.rateLimit
    if (!settings) {
      const release = await this.acquire(target.name, signal)
      try {
        const turn = this.paced(key ?? this.keyOf(target), signal)
        if (turn) await turn
        return await target.model.generate(request)
      } finally {
        release()
      }
    }
    key ??= this.keyOf(target)
    // The request is the turn's own, made for this call: marked in place (a spread copy takes V8's slow path).
    request.rateLimits = 'gate'
    // Made once the call meets the backoff: a call to an endpoint with no state pays nothing for it.
    let wait = from
    let retry = !!from
    // From a refusal to the next attempt the call is waiting on the backoff, all of it (a loaded
    // loop may reach the pause's queue late; that time was the backoff's too), and so is its time in
    // the queue of an endpoint under backoff before its first: `maxWaitMs` bounds the sum.
    while (true) {
      // An endpoint never refused (or recovered) has no state here: its calls are only counted.
      const held = this.endpoints.get(key)
      if (held) {
        wait ??= new BackoffWait(settings)
        wait.endpoint = held
        const refused = wait.from !== undefined
        const pending = held.take(signal, retry, wait)
        if (pending) {
          try {
            await pending
          } finally {
            // After a refusal the clock already runs from the refusal (it stops at the attempt).
            if (!refused) wait.stop()
          }
        }
      } else {
        this.unlimited.set(key, (this.unlimited.get(key) ?? 0) + 1)
      }
      // Before a first refusal only the endpoint's queue is the backoff's; after one, caps and the call rate are too.
      const bound = wait?.from === undefined ? undefined : wait
      let release = NO_CAPS
      if (this.global || this.perModel.size) {
        try {
          release = await this.acquire(target.name, signal, bound)
        } catch (error) {
          this.leave(key, held)
          throw error
        }
      }
      try {
        const turn = this.paced(key, signal, bound)
        if (turn) await turn
      } catch (error) {
        release()
        this.leave(key, held)
        throw error
      }
      if (this.endpoints.get(key)?.pauseLeft()) {
        // Another call was refused while this one waited for a cap or its turn: wait out the pause first.
        release()
        this.leave(key, held)
        retry = true
        continue
      }
      if (wait) {
        wait.stop()
        // Its turn came as its budget ran out (a timer not yet run): no attempt past the budget.
        if (wait.over) {
          release()
          this.leave(key, held)
          throw wait.expired()
        }
      }
      const epoch = held?.epoch ?? 0
      let response: GenerateResponse
      try {
        response = await target.model.generate(request)
      } catch (error) {
        const failedAt = performance.now()
        const refusal = signal.aborted ? undefined : rateLimitOf(error)
        const endpoint = refusal && this.limited(key, held)
        const pause = endpoint && endpoint.refused(epoch, refusal)
        release()
        this.leave(key, held)
        if (!refusal) throw error
        wait ??= new BackoffWait(settings)
        wait.attempts++
        wait.endpoint = endpoint
        wait.refused(refusal, failedAt)
        const spent = wait.spentBy(pause!, error)
        if (spent) throw spent
        retry = true
        continue
      }
      ;(held ?? this.endpoints.get(key))?.succeeded(epoch)
      release()
      this.leave(key, held)
      if (wait && wait.waited >= 1) {
        const usage = response.usage ?? { inputTokens: 0, outputTokens: 0 }
        response = { ...response, usage: { ...usage, rateLimitWaitMs: Math.round(wait.waited) } }
      }
      return response
    }
  }

  /** A counted call (see `CountedGate`) failed at `failedAt`: a refusal for its rate goes on as a gated call's second attempt. */
  protected override async failed(
    target: GateTarget, request: GenerateRequest, key: string, error: unknown, failedAt: number,
  ): Promise<GenerateResponse> {
    const settings = this.rateLimit!
    const refusal = request.signal.aborted ? undefined : rateLimitOf(error)
    const endpoint = refusal && this.limited(key, undefined)
    const pause = endpoint && endpoint.refused(0, refusal)
    this.leave(key, undefined)
    if (!refusal) throw error
    const wait = new BackoffWait(settings)
    wait.attempts = 1
    wait.endpoint = endpoint
    wait.refused(refusal, failedAt)
    const spent = wait.spentBy(pause!, error)
    if (spent) throw spent
    return this.gated(target, request, key, wait)
  }

  /**
   * Waits for the call's turn at `key`'s call rate, when the gate has one (a call takes its token last, just before it is sent).
   * undefined: its token is taken now, and the caller sends it without awaiting anything: an `await` would let other calls' work
   * run between its token and its start, and one of them take the next token then and be sent with it.
   */
  private paced(key: string, signal: AbortSignal, bound?: WaitBound): Promise<void> | undefined {
    if (this.perSecond === undefined) return undefined
    let rate = this.rates.get(key)
    if (!rate) {
      if (this.rates.size >= 64) for (const [old, kept] of this.rates) if (kept.idle) this.rates.delete(old)
      rate = new CallRate(key, this.perSecond, this.maxQueued)
      this.rates.set(key, rate)
    }
    return rate.take(signal, bound)
  }

  /**
   * The endpoint state of `key`, made at its first refusal: it takes over the count of the calls
   * in flight to it (they were let through unlimited, at epoch 0, and leave through it).
   */
  private limited(key: string, held: Endpoint | undefined): Endpoint {
    let endpoint = held ?? this.endpoints.get(key)
    if (!endpoint) {
      endpoint = new Endpoint(key, this.maxQueued, this.rateLimit!, this.unlimited.get(key) ?? 0)
      this.unlimited.delete(key)
      this.endpoints.set(key, endpoint)
    }
    return endpoint
  }

  /**
   * Waits for a slot of `model`'s cap, then one of the process-wide cap (always in that order:
   * a call holding a global slot never waits for a model slot, so the two cannot deadlock).
   * Resolves with the one function that frees both; rejects with `signal.reason` when the signal
   * aborts first (the call leaves the queue at once) or `MODEL_GATE_FULL` when a queue is full.
   */
  private async acquire(model: string, signal: AbortSignal, bound?: WaitBound): Promise<() => void> {
    if (signal.aborted) throw signal.reason
    const own = this.perModel.get(model)
    if (own) await own.take(signal, false, bound)
    if (this.global) {
      try {
        await this.global.take(signal, false, bound)
      } catch (error) {
        own?.free()
        throw error
      }
    }
    let freed = false
    return () => {
      if (freed) return
      freed = true
      this.global?.free()
      own?.free()
    }
  }
}
