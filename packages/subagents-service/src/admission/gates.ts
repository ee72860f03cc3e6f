import type { Budget } from '@cordis-subagents/agent'
import { SubagentError } from '../errors.js'
import { aborted } from '../run/start-failure.js'
import type { SlotHolder } from './slot-holders.js'
import {
  acquireParentSlot, acquireTreeSlot, describeParentSlots, describeTreeSlots, parentHeldByIdle, type ParentGate, type Slot, type Tree,
  treeHeldByIdle,
} from './waiters.js'

// The two gates whose slots a start takes, the per-parent gate and its tree's, and taking them: free slots at once; a
// refusal because idle runs hold every slot, or a wait in a gate's queue (waiters.ts), naming what holds them.

/**
 * How many children one parent may have live at once: a FIFO gate per parent object (not its id:
 * ids may repeat across agent runtimes). A slot is held from admission until the run is disposed,
 * parked and interrupted runs included (see the README: a parked child keeps its slot).
 */
export class ParentGates {
  /** @internal */
  readonly gates = new Map<object, ParentGate>()

  /** Takes a slot of `key` for `holder` when one is free and nobody queues for it (true), without waiting. */
  tryAcquire(key: object, limit: number, holder: SlotHolder): boolean {
    const gate = this.gate(key)
    if (gate.active >= limit || gate.queue.length) return false
    gate.active++
    gate.holders.add(holder)
    return true
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

  /** @internal the gate of `key` (made on first use). */
  gate(key: object): ParentGate {
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

export class TreeGates {
  /** @internal */
  readonly trees = new Map<object, Tree>()

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

  private own(entry: Tree, holder: SlotHolder | undefined): Slot {
    const slot: Slot = { lent: false, holder }
    entry.own.add(slot)
    return slot
  }

  /** @internal drops `tree`'s entry once nothing holds or waits for a slot. */
  forget(tree: object) {
    const entry = this.trees.get(tree)
    if (entry && entry.active <= 0 && !entry.queue.length) this.trees.delete(tree)
  }
}

export interface SlotRequest {
  /** The per-parent gate's key (the parent agent) and its id, for messages. */
  key: object
  parentId: string
  perParent: number
  /** The tree's gate, its limit, and the parent's own tree slot (lent to its first child), when the parent has a budget. */
  tree?: { root: Budget; limit: number; lender?: Slot }
  holder: SlotHolder & { waitSignal(): AbortSignal }
}

/**
 * Takes a per-parent slot and, with a tree, a tree slot; gives the tree slot. Throws `PARKED_LIMIT`
 * at once when every slot of the parent (or of the tree) is held by a parked or interrupted run
 * (only an answer, a wake, a close or `maxParkedMs` frees one: waiting would block the parent that
 * must answer); a wait rejects `ABORTED` naming the holders when the holder's wait signal aborts. Free slots are
 * taken synchronously (no promise, no tick: the common case); a promise only when it waits.
 */
export function takeSlots(parents: ParentGates, trees: TreeGates, request: SlotRequest): Slot | undefined | Promise<Slot | undefined> {
  const { key, parentId, perParent, holder } = request
  if (parents.tryAcquire(key, perParent, holder)) return treeSlot(parents, trees, request)
  if (parentHeldByIdle(parents, key, perParent)) {
    throw new SubagentError('PARKED_LIMIT', `Agent "${parentId}" cannot start another child now: all ${perParent} of its slots `
      + `(maxConcurrentPerParent) are held by children that wait for an answer or a wake: ${describeParentSlots(parents, key)}. `
      + 'A parked child keeps its slot until it is answered, closed, or its provider\'s maxParkedMs passes. '
      + 'Answer one (subagent_reply, or ctx.subagents.resume(runId, answer)) or close it, then delegate again.')
  }
  return acquireParentSlot(parents, key, perParent, holder, holder.waitSignal(), () =>
    aborted(`while the start was waiting for a slot of agent "${parentId}" (all ${perParent} of maxConcurrentPerParent held: ${describeParentSlots(parents, key)})`))
    .then(() => treeSlot(parents, trees, request))
}

/** The tree slot, once the per-parent one is taken (given back when the tree refuses or the wait aborts). */
function treeSlot(parents: ParentGates, trees: TreeGates, request: SlotRequest): Slot | undefined | Promise<Slot> {
  const { key, parentId, tree, holder } = request
  if (!tree) return undefined
  const { root, limit, lender } = tree
  const slot = trees.tryAcquire(root, limit, lender, holder)
  if (slot) return slot
  if (treeHeldByIdle(trees, root, limit)) {
    parents.release(key, holder)
    throw new SubagentError('PARKED_LIMIT', `Agent "${parentId}" cannot start another child now: all ${limit} working slots of its tree `
      + `(maxConcurrent) are held by runs that wait for an answer or a wake: ${describeTreeSlots(trees, root)}. `
      + 'A parked run keeps its slot until it is answered, closed, or its provider\'s maxParkedMs passes. '
      + 'Answer one (ctx.subagents.pending() lists them) or close it, then delegate again.')
  }
  return acquireTreeSlot(trees, root, limit, lender, holder.waitSignal(), () =>
    aborted(`while the start was waiting for a slot of its tree (all ${limit} of maxConcurrent held: ${describeTreeSlots(trees, root)})`), holder)
    .catch((error: unknown) => {
      parents.release(key, holder)
      throw error
    })
}
