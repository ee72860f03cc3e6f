import { describeHolders, isIdleHolder, type SlotHolder } from './slot-holders.js'
import { type Gate, type Waiter, waitInQueue } from './waiters.js'

// The two gates a start passes before its run exists: the per-parent gate and the tree's gate.

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

/**
 * How many delegated runs of one tree may work at once, without the nested deadlock a plain
 * semaphore has: a parent that waits on its own children must not hold the slot they need.
 *
 * A parent's delegation is a tool call, and a parent in a tool call makes no model calls until it
 * returns; so a parent that holds a slot lends it to its first waiting child (and, as each
 * borrower ends, to its next one) instead of keeping it idle. Only runs that hold a slot and have
 * not lent it are working. Every other start waits FIFO for a slot of the tree.
 */
export interface Slot {
  /** The parent's slot this one borrows; undefined for a slot of the tree's own. */
  readonly lender?: Slot
  /** Lent to a child right now. */
  lent: boolean
  /** The run it was taken for (named when a start waits too long for a slot). */
  readonly holder?: SlotHolder
}

interface TreeWaiter extends Waiter<Slot> {
  parent?: Slot
  holder?: SlotHolder
}

/** `active`: slots of the tree's own in use (borrowed slots are not counted again); `own`: those slots. */
interface Tree extends Gate<TreeWaiter> {
  own: Set<Slot>
}

export class TreeGates {
  private readonly trees = new Map<object, Tree>()

  /** Runs of `tree` working now (holding a slot they have not lent). */
  working(tree: object): number {
    return this.trees.get(tree)?.active ?? 0
  }

  /**
   * A slot in `tree` for a child of `parent` (the parent's own slot, if it holds one). Resolves at
   * once when the parent can lend or a slot is free; otherwise waits FIFO. Rejects with
   * `onAbort()`'s error when `signal` aborts while waiting.
   */
  acquire(
    tree: object, limit: number, parent: Slot | undefined, signal: AbortSignal, onAbort: () => Error, holder?: SlotHolder,
  ): Promise<Slot> {
    const slot = this.tryAcquire(tree, limit, parent, holder)
    if (slot) return Promise.resolve(slot)
    return waitInQueue<Slot, TreeWaiter>(this.trees.get(tree)!.queue, { parent, holder }, signal, onAbort, () => this.forget(tree))
  }

  /** Whether every slot of `tree` is its own and held by a parked or interrupted run (only answers, wakes or closes free one). */
  heldByIdle(tree: object, limit: number): boolean {
    const entry = this.trees.get(tree)
    if (!entry || entry.active < limit || entry.own.size < entry.active) return false
    for (const slot of entry.own) if (!slot.holder || !isIdleHolder(slot.holder)) return false
    return true
  }

  /** What holds the tree's own slots now (bounded; for a start that waited too long). */
  describe(tree: object): string {
    const entry = this.trees.get(tree)
    return entry ? describeHolders([...entry.own].flatMap((slot) => slot.holder ? [slot.holder] : [])) : 'none'
  }

  /** The slot `acquire` would resolve with at once (the parent's to lend, or a free one); undefined when it would wait. */
  tryAcquire(tree: object, limit: number, parent: Slot | undefined, holder?: SlotHolder): Slot | undefined {
    if (parent && !parent.lent) {
      parent.lent = true
      return { lender: parent, lent: false, holder }
    }
    let entry = this.trees.get(tree)
    if (!entry) this.trees.set(tree, entry = { active: 0, queue: [], own: new Set() })
    if (entry.active >= limit || entry.queue.length) return undefined
    entry.active++
    return this.own(entry, holder)
  }

  /** Gives `slot` back: to the next waiting child of its lender, else the next waiter of the tree. */
  release(tree: object, slot: Slot): void {
    const entry = this.trees.get(tree)
    if (slot.lender) {
      const index = entry ? entry.queue.findIndex((waiter) => waiter.parent === slot.lender) : -1
      if (index >= 0) {
        const next = entry!.queue.splice(index, 1)[0]
        return next.grant({ lender: slot.lender, lent: false, holder: next.holder })
      }
      slot.lender.lent = false
      return
    }
    if (!entry) return
    entry.own.delete(slot)
    const next = entry.queue.shift()
    // A waiter's parent is always lending already (else it would have borrowed at once): hand the slot on.
    if (next) return next.grant(this.own(entry, next.holder))
    entry.active--
    this.forget(tree)
  }

  /** Rejects every waiter (the service stopped). */
  failAll(error: () => Error): void {
    for (const entry of this.trees.values()) {
      for (const waiter of entry.queue.splice(0)) waiter.fail(error())
    }
  }

  private own(entry: Tree, holder: SlotHolder | undefined): Slot {
    const slot: Slot = { lent: false, holder }
    entry.own.add(slot)
    return slot
  }

  private forget(tree: object) {
    const entry = this.trees.get(tree)
    if (entry && entry.active <= 0 && !entry.queue.length) this.trees.delete(tree)
  }
}
