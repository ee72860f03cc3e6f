import { describeHolders, isIdleHolder, type SlotHolder } from './slot-holders.js'

// Off the plain road: a start whose slots are not free. The gates (ParentGates, TreeGates in gates.ts,
// which take and give back free slots); a refusal because idle runs hold every slot, a wait in a
// gate's FIFO queue, what holds the slots (for a refusal's message) and the service's stop are here.

/** Someone waiting FIFO for a slot of a gate. */
export interface Waiter<T> {
  grant(value: T): void
  fail(error: Error): void
}

/** One gate's count of slots in use and its FIFO queue. */
export interface Gate<W> {
  active: number
  queue: W[]
}

/**
 * Joins the end of `queue` with `fields` and waits: fulfils with what `grant` gives, rejects with
 * what `fail` gives, or, when `signal` aborts first, leaves the queue, calls `left`, and rejects
 * with `onAbort()`.
 */
function waitInQueue<T, W extends Waiter<T>>(
  queue: W[], fields: Omit<W, keyof Waiter<T>>, signal: AbortSignal, onAbort: () => Error, left?: () => void,
): Promise<T> {
  // An abort that landed before this wait (e.g. between two gates) would never fire its event again.
  if (signal.aborted) {
    left?.()
    return Promise.reject(onAbort())
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      const index = queue.indexOf(waiter)
      if (index >= 0) queue.splice(index, 1)
      left?.()
      reject(onAbort())
    }
    const waiter = {
      ...fields,
      grant: (value: T) => {
        signal.removeEventListener('abort', abort)
        resolve(value)
      },
      fail: (error: Error) => {
        signal.removeEventListener('abort', abort)
        reject(error)
      },
    } as W
    signal.addEventListener('abort', abort, { once: true })
    queue.push(waiter)
  })
}

interface ParentWaiter extends Waiter<void> {
  holder: SlotHolder
}
/** `active`: slots held, i.e. granted starts plus handed-over runs not yet disposed; `holders`: the runs that hold them. */
export interface ParentGate extends Gate<ParentWaiter> {
  holders: Set<SlotHolder>
}
/** A slot of a tree's gate. */
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
export interface Tree extends Gate<TreeWaiter> {
  own: Set<Slot>
}

/** What the waits need of the per-parent gates (`ParentGates`). */
interface ParentGatesPort {
  readonly gates: Map<object, ParentGate>
  tryAcquire(key: object, limit: number, holder: SlotHolder): boolean
  gate(key: object): ParentGate
}

/** What the waits need of the tree gates (`TreeGates`). */
interface TreeGatesPort {
  readonly trees: Map<object, Tree>
  tryAcquire(tree: object, limit: number, parent: Slot | undefined, holder?: SlotHolder): Slot | undefined
  forget(tree: object): void
}

/** Resolves once `key` has a free slot for `holder` (FIFO); rejects with `onAbort()` when `signal` aborts first. */
export function acquireParentSlot(
  parents: ParentGatesPort, key: object, limit: number, holder: SlotHolder, signal: AbortSignal, onAbort: () => Error,
): Promise<void> {
  if (parents.tryAcquire(key, limit, holder)) return Promise.resolve()
  return waitInQueue<void, ParentWaiter>(parents.gate(key).queue, { holder }, signal, onAbort)
}

/**
 * Resolves with a slot of `tree` for a child of `parent` (lent at once when `parent` is not lending
 * yet); waits FIFO otherwise, and rejects with `onAbort()` when `signal` aborts first.
 */
export function acquireTreeSlot(
  trees: TreeGatesPort, tree: object, limit: number, parent: Slot | undefined, signal: AbortSignal, onAbort: () => Error,
  holder?: SlotHolder,
): Promise<Slot> {
  const slot = trees.tryAcquire(tree, limit, parent, holder)
  if (slot) return Promise.resolve(slot)
  return waitInQueue<Slot, TreeWaiter>(trees.trees.get(tree)!.queue, { parent, holder }, signal, onAbort, () => trees.forget(tree))
}

/**
 * Whether a start for `key` would wait on slots only answers or wakes can free: every slot is
 * held by a parked or interrupted run (nothing running will end and free one).
 */
export function parentHeldByIdle(parents: ParentGatesPort, key: object, limit: number): boolean {
  const gate = parents.gates.get(key)
  if (!gate || gate.active < limit || gate.holders.size < gate.active) return false
  for (const holder of gate.holders) if (!isIdleHolder(holder)) return false
  return true
}

/** Whether every slot of `tree` is its own and held by a parked or interrupted run (only answers, wakes or closes free one). */
export function treeHeldByIdle(trees: TreeGatesPort, tree: object, limit: number): boolean {
  const entry = trees.trees.get(tree)
  if (!entry || entry.active < limit || entry.own.size < entry.active) return false
  for (const slot of entry.own) if (!slot.holder || !isIdleHolder(slot.holder)) return false
  return true
}

/** What holds the slots of `key` now (bounded; for refusals and timeouts). */
export function describeParentSlots(parents: ParentGatesPort, key: object): string {
  const gate = parents.gates.get(key)
  return gate ? describeHolders(gate.holders) : 'none'
}

/** What holds the tree's own slots now (bounded; for a start that waited too long). */
export function describeTreeSlots(trees: TreeGatesPort, tree: object): string {
  const entry = trees.trees.get(tree)
  return entry ? describeHolders([...entry.own].flatMap((slot) => slot.holder ? [slot.holder] : [])) : 'none'
}

/** Runs of `tree` working now (holding a slot they have not lent). */
export function workingSlots(trees: TreeGatesPort, tree: object): number {
  return trees.trees.get(tree)?.active ?? 0
}

/** Rejects every waiter of every gate (the service stopped). */
export function failAllWaiters(gates: Iterable<Gate<Waiter<never>>>, error: () => Error): void {
  for (const gate of gates) {
    for (const waiter of gate.queue.splice(0)) waiter.fail(error())
  }
}
