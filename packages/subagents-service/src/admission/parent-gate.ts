import { type SlotHolder, describeHolders, isIdleHolder } from './slot-holders.js'
import { type Gate, type Waiter, waitInQueue } from './waiters.js'

interface ParentWaiter extends Waiter<void> {
  holder: SlotHolder
}

/** `active`: slots held, i.e. granted starts plus handed-over runs not yet disposed; `holders`: the runs that hold them. */
interface ParentGate extends Gate<ParentWaiter> {
  holders: Set<SlotHolder>
}

/**
 * How many children one parent may have live at once: a FIFO gate per parent object (not its id:
 * ids may repeat across agent runtimes). A slot is held from admission until the run is disposed,
 * parked and interrupted runs included (see the README: a parked child keeps its slot).
 */
export class ParentGates {
  private readonly gates = new Map<object, ParentGate>()

  /** Resolves once `key` has a free slot for `holder` (FIFO); rejects with `onAbort()` when `signal` aborts first. */
  acquire(key: object, limit: number, holder: SlotHolder, signal: AbortSignal, onAbort: () => Error): Promise<void> {
    if (this.tryAcquire(key, limit, holder)) return Promise.resolve()
    return waitInQueue<void, ParentWaiter>(this.gate(key).queue, { holder }, signal, onAbort)
  }

  /** Takes a slot of `key` for `holder` when one is free and nobody queues for it (true), without waiting. */
  tryAcquire(key: object, limit: number, holder: SlotHolder): boolean {
    const gate = this.gate(key)
    if (gate.active >= limit || gate.queue.length) return false
    gate.active++
    gate.holders.add(holder)
    return true
  }

  /**
   * Whether a start for `key` would wait on slots only answers or wakes can free: every slot is
   * held by a parked or interrupted run (nothing running will end and free one).
   */
  heldByIdle(key: object, limit: number): boolean {
    const gate = this.gates.get(key)
    if (!gate || gate.active < limit || gate.holders.size < gate.active) return false
    for (const holder of gate.holders) if (!isIdleHolder(holder)) return false
    return true
  }

  /** What holds the slots of `key` now (bounded; for refusals and timeouts). */
  describe(key: object): string {
    const gate = this.gates.get(key)
    return gate ? describeHolders(gate.holders) : 'none'
  }

  /** Frees `holder`'s slot of `key`, handing it straight to the oldest waiter (FIFO, no barging). */
  release(key: object, holder: SlotHolder): void {
    const gate = this.gates.get(key)
    if (!gate) return
    gate.holders.delete(holder)
    const next = gate.queue.shift()
    if (next) {
      gate.holders.add(next.holder)
      return next.grant()
    }
    gate.active--
    if (gate.active <= 0 && !gate.queue.length) this.gates.delete(key)
  }

  /** Rejects every waiter (the service stopped). */
  failAll(error: () => Error): void {
    for (const gate of this.gates.values()) {
      for (const waiter of gate.queue.splice(0)) waiter.fail(error())
    }
  }

  private gate(key: object): ParentGate {
    let gate = this.gates.get(key)
    if (!gate) this.gates.set(key, gate = { active: 0, queue: [], holders: new Set() })
    return gate
  }
}
