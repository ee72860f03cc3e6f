import { AgentError } from './errors.js'

// The process-wide gate around the model call only: a cap on calls in flight across every root
// run of a runtime, and one per model. A run waits here with its step already reserved; nothing
// else (tools, delegations, a parent waiting for its child) holds a slot, so a tree cannot
// deadlock on it: a slot is always held by a call that ends without needing another slot.

export interface ModelGateOptions {
  /** Model calls in flight across all models; undefined: no cap of its own. */
  maxInFlight?: number
  /** Per model name: calls of that model in flight. */
  models?: Readonly<Record<string, { maxInFlight?: number } | undefined>>
  /** Calls that may wait at one cap before another is refused (`MODEL_GATE_FULL`). */
  maxQueued: number
}

interface Waiter {
  grant(): void
}

/** One cap: `limit` slots, and the calls waiting for one in arrival order (a Set: FIFO with O(1) removal on abort). */
class Slots {
  active = 0
  readonly queue = new Set<Waiter>()

  constructor(readonly label: string, readonly limit: number, private readonly maxQueued: number) {}

  /** undefined when a slot was taken at once; else a promise that resolves once one is handed over, rejecting on abort. */
  take(signal: AbortSignal): Promise<void> | undefined {
    if (this.active < this.limit && !this.queue.size) {
      this.active++
      return undefined
    }
    if (this.queue.size >= this.maxQueued) {
      return Promise.reject(new AgentError('MODEL_GATE_FULL',
        `${this.maxQueued} model calls already wait for ${this.label}; raise its cap (maxInFlight), or start fewer runs at once.`))
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.queue.delete(waiter)
        reject(signal.reason)
      }
      const waiter: Waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort)
          resolve()
        },
      }
      this.queue.add(waiter)
      signal.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Frees a slot, handing it straight to the oldest waiter (no barging). */
  free(): void {
    for (const next of this.queue) {
      this.queue.delete(next)
      return next.grant()
    }
    this.active--
  }
}

export class ModelGate {
  private readonly global?: Slots
  private readonly perModel = new Map<string, Slots>()

  private constructor(options: ModelGateOptions) {
    if (options.maxInFlight !== undefined) {
      this.global = new Slots('the process-wide cap (maxModelCallsInFlight)', options.maxInFlight, options.maxQueued)
    }
    for (const [name, caps] of Object.entries(options.models ?? {})) {
      if (caps?.maxInFlight !== undefined) {
        this.perModel.set(name, new Slots(`model "${name}" (models.${name}.maxInFlight)`, caps.maxInFlight, options.maxQueued))
      }
    }
  }

  /** A gate, or undefined when no cap is configured (then a model call pays one check). */
  static create(options: ModelGateOptions): ModelGate | undefined {
    const gate = new ModelGate(options)
    return gate.global || gate.perModel.size ? gate : undefined
  }

  /** Calls of `model` (or of all models) in flight now; for tests and status displays. */
  inFlight(model?: string): number {
    return (model === undefined ? this.global : this.perModel.get(model))?.active ?? 0
  }

  /**
   * Waits for a slot of `model`'s cap, then one of the process-wide cap (always in that order:
   * a call holding a global slot never waits for a model slot, so the two cannot deadlock).
   * Resolves with the one function that frees both; rejects with `signal.reason` when the signal
   * aborts first (the call leaves the queue at once) or `MODEL_GATE_FULL` when a queue is full.
   */
  async acquire(model: string, signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) throw signal.reason
    const own = this.perModel.get(model)
    if (own) await own.take(signal)
    if (this.global) {
      try {
        await this.global.take(signal)
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
