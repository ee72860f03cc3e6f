import type { Budget } from '@cordis-subagents/agent'
import { type AbortScope, onAbort as onAbortOf } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import { aborted } from '../run/start-failure.js'
import type { SubagentProvider, SubagentRequest } from '../types.js'
import { describeHolders, isIdleHolder, type SlotHolder } from './slot-holders.js'

// Off the plain road: a start whose slots are not free. The gates (ParentGates, TreeGates in admission.ts) take and
// give back free slots; a refusal because idle runs hold every slot, a wait in a gate's FIFO queue, its end (granted
// or refused), what holds the slots (for a refusal's message) and the service's stop are here.

/** Someone waiting FIFO for a slot of a gate. */
interface Waiter<T> {
  grant(value: T): void
  fail(error: Error): void
}

/** One gate's count of slots in use and its FIFO queue. */
interface Gate<W> {
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
  release(key: object, holder: SlotHolder): void
}

/** What the waits need of the tree gates (`TreeGates`). */
interface TreeGatesPort {
  readonly trees: Map<object, Tree>
  tryAcquire(tree: object, limit: number, parent: Slot | undefined, holder?: SlotHolder): Slot | undefined
  forget(tree: object): void
}

/** Resolves once `key` has a free slot for `holder` (FIFO); rejects with `onAbort()` when `signal` aborts first. */
function acquireParentSlot(
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
function parentHeldByIdle(parents: ParentGatesPort, key: object, limit: number): boolean {
  const gate = parents.gates.get(key)
  if (!gate || gate.active < limit || gate.holders.size < gate.active) return false
  for (const holder of gate.holders) if (!isIdleHolder(holder)) return false
  return true
}

/** Whether every slot of `tree` is its own and held by a parked or interrupted run (only answers, wakes or closes free one). */
function treeHeldByIdle(trees: TreeGatesPort, tree: object, limit: number): boolean {
  const entry = trees.trees.get(tree)
  if (!entry || entry.active < limit || entry.own.size < entry.active) return false
  for (const slot of entry.own) if (!slot.holder || !isIdleHolder(slot.holder)) return false
  return true
}

/** What holds the slots of `key` now (bounded; for refusals and timeouts). */
function describeParentSlots(parents: ParentGatesPort, key: object): string {
  const gate = parents.gates.get(key)
  return gate ? describeHolders(gate.holders) : 'none'
}

/** What holds the tree's own slots now (bounded; for a start that waited too long). */
function describeTreeSlots(trees: TreeGatesPort, tree: object): string {
  const entry = trees.trees.get(tree)
  return entry ? describeHolders([...entry.own].flatMap((slot) => slot.holder ? [slot.holder] : [])) : 'none'
}

/** Runs of `tree` working now (holding a slot they have not lent). */
export function workingSlots(trees: TreeGatesPort, tree: object): number {
  return trees.trees.get(tree)?.active ?? 0
}

/** Rejects every waiter of every gate (the service stopped). */
function failAllWaiters(gates: Iterable<Gate<Waiter<never>>>, error: () => Error): void {
  for (const gate of gates) {
    for (const waiter of gate.queue.splice(0)) waiter.fail(error())
  }
}

/** A ticket's wait for its slots (`Admitted`): aborted by the caller's signal or `cancelWait`; made on the first wait. */
export interface WaitingHolder extends SlotHolder {
  readonly caller: AbortSignal | AbortScope
  wait?: { controller: AbortController; stop: () => void }
}

export interface SlotRequest {
  /** The per-parent gate's key (the parent agent) and its id, for messages. */
  key: object
  parentId: string
  perParent: number
  /** The tree's gate, its limit, and the parent's own tree slot (lent to its first child), when the parent has a budget. */
  tree?: { root: Budget; limit: number; lender?: Slot }
  holder: WaitingHolder
}

/** What a wait for slots aborts on: the caller's signal or `cancelWait`. */
function waitSignal(holder: WaitingHolder): AbortSignal {
  if (holder.wait) return holder.wait.controller.signal
  const controller = new AbortController()
  const stop = onAbortOf(holder.caller, () => controller.abort(holder.caller.reason))
  holder.wait = { controller, stop }
  return controller.signal
}

/** The start's cancel while it waits for its slots. */
export function cancelWait(holder: WaitingHolder, reason?: string | Error): void {
  holder.wait?.controller.abort(reason instanceof Error ? reason : new SubagentError('ABORTED', reason ?? 'The run was cancelled.'))
}

/** The wait is over: lets go of the caller's signal; true when the wait was aborted. */
function endWait(holder: WaitingHolder): boolean {
  if (!holder.wait) return false
  holder.wait.stop()
  return holder.wait.controller.signal.aborted
}

/**
 * A start whose per-parent slot is not free: `PARKED_LIMIT` at once when every slot of the parent is held by a
 * parked or interrupted run (only an answer, a wake, a close or `maxParkedMs` frees one: waiting would block the
 * parent that must answer); else a wait, rejecting `ABORTED` naming the holders when the holder's wait aborts.
 */
export function waitForParentSlot(
  parents: ParentGatesPort, request: SlotRequest, then: () => Slot | undefined | Promise<Slot>,
): Promise<Slot | undefined> {
  const { key, parentId, perParent, holder } = request
  if (parentHeldByIdle(parents, key, perParent)) {
    throw new SubagentError('PARKED_LIMIT', `Agent "${parentId}" cannot start another child now: all ${perParent} of its slots `
      + `(maxConcurrentPerParent) are held by children that wait for an answer or a wake: ${describeParentSlots(parents, key)}. `
      + 'A parked child keeps its slot until it is answered, closed, or its provider\'s maxParkedMs passes. '
      + 'Answer one (subagent_reply, or ctx.subagents.resume(runId, answer)) or close it, then delegate again.')
  }
  return acquireParentSlot(parents, key, perParent, holder, waitSignal(holder), () =>
    aborted(`while the start was waiting for a slot of agent "${parentId}" (all ${perParent} of maxConcurrentPerParent held: ${describeParentSlots(parents, key)})`))
    .then(then)
}

/** The same for the tree slot, once the per-parent one is taken (given back when the tree refuses or the wait aborts). */
export function waitForTreeSlot(parents: ParentGatesPort, trees: TreeGatesPort, request: SlotRequest): Promise<Slot> {
  const { key, parentId, holder } = request
  const { root, limit, lender } = request.tree!
  if (treeHeldByIdle(trees, root, limit)) {
    parents.release(key, holder)
    throw new SubagentError('PARKED_LIMIT', `Agent "${parentId}" cannot start another child now: all ${limit} working slots of its tree `
      + `(maxConcurrent) are held by runs that wait for an answer or a wake: ${describeTreeSlots(trees, root)}. `
      + 'A parked run keeps its slot until it is answered, closed, or its provider\'s maxParkedMs passes. '
      + 'Answer one (ctx.subagents.pending() lists them) or close it, then delegate again.')
  }
  return acquireTreeSlot(trees, root, limit, lender, waitSignal(holder), () =>
    aborted(`while the start was waiting for a slot of its tree (all ${limit} of maxConcurrent held: ${describeTreeSlots(trees, root)})`), holder)
    .catch((error: unknown) => {
      parents.release(key, holder)
      throw error
    })
}

/** What the end of a wait needs of the ticket (`Admitted`) and of `Admissions`. */
interface WaitingTicket extends WaitingHolder {
  slot?: Slot
  provider: SubagentProvider
  readonly parentBudget?: Budget
  carve(request: SubagentRequest): void
  refundAndRelease(): void
}
interface AdmissionsPort {
  stopped: boolean
  readonly parents: { readonly gates: Map<object, ParentGate> }
  readonly trees: { readonly trees: Map<object, Tree> }
  lookup(name: string, context: string, request?: SubagentRequest): SubagentProvider
}

/** The slots of a ticket that waited are taken: the provider is looked up (and checked) again, the wait's abort honoured. */
export function granted(
  owner: AdmissionsPort, name: string, request: SubagentRequest, ticket: WaitingTicket, slot: Slot | undefined,
): void {
  ticket.slot = slot
  const abortedMeanwhile = endWait(ticket)
  try {
    if (owner.stopped) throw new SubagentError('NO_PROVIDER', 'The subagents service has stopped.')
    ticket.provider = owner.lookup(name, ' (it was removed while this start was waiting for a slot)', request)
    if (abortedMeanwhile) throw aborted('while the start was waiting for a slot')
    ticket.carve(request)
  } catch (error) {
    ticket.refundAndRelease()
    throw error
  }
}

/** A start refused with nothing held: the parent gets its delegation back. */
export function refused(ticket: WaitingTicket): void {
  ticket.parentBudget?.charge('children', -1)
  endWait(ticket)
}

/** Fails every start waiting for a slot (the service stops); later checks refuse `NO_PROVIDER`. */
export function stopAdmissions(owner: AdmissionsPort, error: () => SubagentError): void {
  owner.stopped = true
  failAllWaiters(owner.trees.trees.values(), error)
  failAllWaiters(owner.parents.gates.values(), error)
}

/** Hands a freed per-parent slot straight to the oldest waiter (FIFO, no barging). */
export function handOnParentSlot(gate: ParentGate): void {
  const next = gate.queue.shift()!
  gate.holders.add(next.holder)
  next.grant()
}

/** Gives a borrowed tree slot back: to the next waiting child of its lender, else back to the lender. */
export function giveBackLent(entry: Tree | undefined, slot: Slot & { lender: Slot }): void {
  const index = entry ? entry.queue.findIndex((waiter) => waiter.parent === slot.lender) : -1
  if (index >= 0) {
    const next = entry!.queue.splice(index, 1)[0]
    return next.grant({ lender: slot.lender, lent: false, holder: next.holder })
  }
  slot.lender.lent = false
}
