import { SubagentError } from '../errors.js'
import { aborted } from '../run/start-failure.js'
import type { SlotHolder } from './slot-holders.js'
import type { ParentGates } from './parent-gate.js'
import type { Slot, TreeGates } from './tree-gate.js'
import type { Budget } from '@cordis-subagents/agent'

// A start's wait for its slots: the parent's (maxConcurrentPerParent), then its tree's (maxConcurrent).
// A refusal or an abort of the wait (the tool's timeout, a cancel) names what holds the slots.

interface SlotRequest {
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
  if (parents.heldByIdle(key, perParent)) {
    throw new SubagentError('PARKED_LIMIT', `Agent "${parentId}" cannot start another child now: all ${perParent} of its slots `
      + `(maxConcurrentPerParent) are held by children that wait for an answer or a wake: ${parents.describe(key)}. `
      + 'A parked child keeps its slot until it is answered, closed, or its provider\'s maxParkedMs passes. '
      + 'Answer one (subagent_reply, or ctx.subagents.resume(runId, answer)) or close it, then delegate again.')
  }
  return parents.acquire(key, perParent, holder, holder.waitSignal(), () =>
    aborted(`while the start was waiting for a slot of agent "${parentId}" (all ${perParent} of maxConcurrentPerParent held: ${parents.describe(key)})`))
    .then(() => treeSlot(parents, trees, request))
}

/** The tree slot, once the per-parent one is taken (given back when the tree refuses or the wait aborts). */
function treeSlot(parents: ParentGates, trees: TreeGates, request: SlotRequest): Slot | undefined | Promise<Slot> {
  const { key, parentId, tree, holder } = request
  if (!tree) return undefined
  const { root, limit, lender } = tree
  const slot = trees.tryAcquire(root, limit, lender, holder)
  if (slot) return slot
  if (trees.heldByIdle(root, limit)) {
    parents.release(key, holder)
    throw new SubagentError('PARKED_LIMIT', `Agent "${parentId}" cannot start another child now: all ${limit} working slots of its tree `
      + `(maxConcurrent) are held by runs that wait for an answer or a wake: ${trees.describe(root)}. `
      + 'A parked run keeps its slot until it is answered, closed, or its provider\'s maxParkedMs passes. '
      + 'Answer one (ctx.subagents.pending() lists them) or close it, then delegate again.')
  }
  return trees.acquire(root, limit, lender, holder.waitSignal(), () =>
    aborted(`while the start was waiting for a slot of its tree (all ${limit} of maxConcurrent held: ${trees.describe(root)})`), holder)
    .catch((error: unknown) => {
      parents.release(key, holder)
      throw error
    })
}
