import { type Gate, type Waiter, waitInQueue } from './waiters.js'

/** `active`: slots held, i.e. granted starts plus handed-over runs not yet disposed. */
type ParentGate = Gate<Waiter<void>>

/**
 * How many children one parent may have live at once: a FIFO gate per parent object (not its id:
 * ids may repeat across agent runtimes). A slot is held from admission until the run is disposed.
 */
export class ParentGates {
  private readonly gates = new Map<object, ParentGate>()

  /** Resolves once `key` has a free slot (FIFO); rejects with `onAbort()` when `signal` aborts first. */
  acquire(key: object, limit: number, signal: AbortSignal, onAbort: () => Error): Promise<void> {
    if (this.tryAcquire(key, limit)) return Promise.resolve()
    return waitInQueue<void, Waiter<void>>(this.gates.get(key)!.queue, {}, signal, onAbort)
  }

  /** Takes a slot of `key` when one is free and nobody queues for it (true), without waiting. */
  tryAcquire(key: object, limit: number): boolean {
    let gate = this.gates.get(key)
    if (!gate) this.gates.set(key, gate = { active: 0, queue: [] })
    if (gate.active >= limit || gate.queue.length) return false
    gate.active++
    return true
  }

  /** Frees a slot of `key`, handing it straight to the oldest waiter (FIFO, no barging). */
  release(key: object): void {
    const gate = this.gates.get(key)
    if (!gate) return
    const next = gate.queue.shift()
    if (next) return next.grant()
    gate.active--
    if (gate.active <= 0 && !gate.queue.length) this.gates.delete(key)
  }

  /** Rejects every waiter (the service stopped). */
  failAll(error: () => Error): void {
    for (const gate of this.gates.values()) {
      for (const waiter of gate.queue.splice(0)) waiter.fail(error())
    }
  }
}
