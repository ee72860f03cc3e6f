import type { Budget } from '@cordis-subagents/agent'
import type { Config } from '../config.js'
import { SubagentError } from '../errors.js'
import type { Admission } from '../run/run-host.js'
import { aborted } from '../run/start-failure.js'
import type { Delegation } from '../run/delegation.js'
import type { SubagentProvider, SubagentRequest } from '../types.js'
import { checkCapabilities, checkRequest, checkTraceContext, isObject } from '../validate.js'
import { admitChild, type Checked, placeInTree } from './limits.js'
import { ParentGates } from './parent-gate.js'
import type { SlotHolder } from './slot-holders.js'
import { type Slot, TreeGates } from './tree-gate.js'

// Admission, before a provider is called: the request's checks, then its slots and the parent's
// budget. What it lets through is a ticket (`Admitted`), the one place its slots go back.

/** How admission finds a provider by name (`context` ends the `NO_PROVIDER` message). */
export type ProviderLookup = (name: string, context: string) => SubagentProvider

export class Admissions {
  private readonly parents = new ParentGates()
  private readonly trees = new TreeGates()
  /** The tree slot each delegated run holds, keyed by its budget: its own children may borrow it. */
  private readonly lent = new WeakMap<Budget, Slot>()
  private stopped = false

  constructor(private readonly config: Config, private readonly lookup: ProviderLookup) {}

  /** What is wrong with the request or its place in the tree, before anything waits. */
  check(name: string, request: SubagentRequest): Checked {
    if (this.stopped) throw new SubagentError('NO_PROVIDER', 'The subagents service has stopped.')
    const provider = this.lookup(name, '')
    // What the provider cannot do is reported before what is malformed.
    if (!isObject(request)) throw new SubagentError('INVALID_REQUEST', 'The request must be an object { prompt, parent, signal, ... }.')
    checkCapabilities(provider, request)
    checkRequest(request)
    const traceContext = checkTraceContext(request)
    return { ...placeInTree(request, this.config.maxDepth), traceContext }
  }

  /**
   * Charges the parent's budget and waits for the per-parent and per-tree slots (on the run's
   * signal), then looks the provider up again (it may have gone while the start waited). A free
   * slot is taken at once: a ticket, no promise. On a refusal the run is abandoned (inert) and
   * nothing is held.
   */
  admit(name: string, request: SubagentRequest, checked: Checked, run: Delegation): Admitted | Promise<Admitted> {
    const { parentBudget } = checked
    const { signal } = run
    try {
      if (signal.aborted) throw aborted('before the start')
      if (parentBudget) admitChild(parentBudget, request.parent.id, this.config.maxChildren)
    } catch (error) {
      run.abandon()
      throw error
    }
    const key: object = request.parent
    const perParent = Math.min(this.config.maxConcurrentPerParent, request.budget?.maxConcurrent ?? Infinity)
    let taken: Slot | undefined | Promise<Slot | undefined>
    try {
      const root = parentBudget?.root
      const limit = root && Math.min(this.config.maxConcurrent, root.limits.maxConcurrent)
      const tree = root && { root, limit: limit!, lender: this.lent.get(parentBudget!) }
      taken = takeSlots(this.parents, this.trees, { key, parentId: request.parent.id, perParent, tree, holder: run, signal })
    } catch (error) {
      this.refused(parentBudget, run)
      throw error
    }
    if (!(taken instanceof Promise)) return this.ticket(name, request, checked, run, taken)
    return taken.then((slot) => this.ticket(name, request, checked, run, slot), (error: unknown) => {
      this.refused(parentBudget, run)
      throw error
    })
  }

  /** Fails every start waiting for a slot (the service stops); later checks refuse `NO_PROVIDER`. */
  stop(error: () => SubagentError): void {
    this.stopped = true
    this.trees.failAll(error)
    this.parents.failAll(error)
  }

  private ticket(name: string, request: SubagentRequest, checked: Checked, run: Delegation, slot: Slot | undefined): Admitted {
    const admitted = new Admitted(checked, slot, request.parent, run, this)
    try {
      if (this.stopped) throw new SubagentError('NO_PROVIDER', 'The subagents service has stopped.')
      admitted.provider = this.lookup(name, ' (it was removed while this start was waiting for a slot)')
      checkCapabilities(admitted.provider, request)
      if (run.signal.aborted) throw aborted('while the start was waiting for a slot')
    } catch (error) {
      admitted.refundAndRelease()
      run.abandon()
      throw error
    }
    return admitted
  }

  private refused(parentBudget: Budget | undefined, run: Delegation): void {
    parentBudget?.charge('children', -1)
    run.abandon()
  }

  /** @internal for `Admitted`: frees its slots in both gates, and its lent tree slot. */
  free(admitted: Admitted, gateKey: object, slot: Slot | undefined, lentBy: Budget | undefined): void {
    if (lentBy) this.lent.delete(lentBy)
    if (slot) this.trees.release(admitted.parentBudget!.root, slot)
    this.parents.release(gateKey, admitted.holder)
  }

  /** @internal for `Admitted`: the child's budget lends its tree slot to the child's own children. */
  lend(budget: Budget, slot: Slot): void {
    this.lent.set(budget, slot)
  }
}

/** A start admission let through: its place in the tree, the provider to call, and its slots until `release`. */
export class Admitted implements Admission {
  readonly depth: number
  readonly ceiling: number
  readonly parentBudget?: Budget
  provider!: SubagentProvider
  private released = false
  private lentBy?: Budget

  constructor(
    checked: Checked, private readonly slot: Slot | undefined, private readonly gateKey: object,
    readonly holder: Delegation, private readonly admissions: Admissions,
  ) {
    this.depth = checked.depth
    this.ceiling = checked.ceiling
    this.parentBudget = checked.parentBudget
  }

  lend(budget: Budget): void {
    if (!this.slot || this.released) return
    this.lentBy = budget
    this.admissions.lend(budget, this.slot)
  }

  release(): void {
    if (this.released) return
    this.released = true
    this.admissions.free(this, this.gateKey, this.slot, this.lentBy)
  }

  refundAndRelease(): void {
    this.parentBudget?.charge('children', -1)
    this.release()
  }
}

// A start's wait for its slots: the parent's (maxConcurrentPerParent), then its tree's (maxConcurrent).
// A refusal or an abort of the wait (the tool's timeout, a cancel) names what holds the slots.

interface SlotRequest {
  /** The per-parent gate's key (the parent agent) and its id, for messages. */
  key: object
  parentId: string
  perParent: number
  /** The tree's gate, its limit, and the parent's own tree slot (lent to its first child), when the parent has a budget. */
  tree?: { root: Budget; limit: number; lender?: Slot }
  holder: SlotHolder
  signal: AbortSignal
}

/**
 * Takes a per-parent slot and, with a tree, a tree slot; gives the tree slot. Throws `PARKED_LIMIT`
 * at once when every slot of the parent (or of the tree) is held by a parked or interrupted run
 * (only an answer, a wake, a close or `maxParkedMs` frees one: waiting would block the parent that
 * must answer); a wait rejects `ABORTED` naming the holders when the signal aborts. Free slots are
 * taken synchronously (no promise, no tick: the common case); a promise only when it waits.
 */
function takeSlots(parents: ParentGates, trees: TreeGates, request: SlotRequest): Slot | undefined | Promise<Slot | undefined> {
  const { key, parentId, perParent, holder, signal } = request
  if (parents.tryAcquire(key, perParent, holder)) return treeSlot(parents, trees, request)
  if (parents.heldByIdle(key, perParent)) {
    throw new SubagentError('PARKED_LIMIT', `Agent "${parentId}" cannot start another child now: all ${perParent} of its slots `
      + `(maxConcurrentPerParent) are held by children that wait for an answer or a wake: ${parents.describe(key)}. `
      + 'A parked child keeps its slot until it is answered, closed, or its provider\'s maxParkedMs passes. '
      + 'Answer one (subagent_reply, or ctx.subagents.resume(runId, answer)) or close it, then delegate again.')
  }
  return parents.acquire(key, perParent, holder, signal, () =>
    aborted(`while the start was waiting for a slot of agent "${parentId}" (all ${perParent} of maxConcurrentPerParent held: ${parents.describe(key)})`))
    .then(() => treeSlot(parents, trees, request))
}

/** The tree slot, once the per-parent one is taken (given back when the tree refuses or the wait aborts). */
function treeSlot(parents: ParentGates, trees: TreeGates, request: SlotRequest): Slot | undefined | Promise<Slot> {
  const { key, parentId, tree, holder, signal } = request
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
  return trees.acquire(root, limit, lender, signal, () =>
    aborted(`while the start was waiting for a slot of its tree (all ${limit} of maxConcurrent held: ${trees.describe(root)})`), holder)
    .catch((error: unknown) => {
      parents.release(key, holder)
      throw error
    })
}
