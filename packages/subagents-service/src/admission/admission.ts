import type { Budget } from '@cordis-subagents/agent'
import { onAbort } from '@cordis-subagents/shared'
import type { Config } from '../config.js'
import { SubagentError } from '../errors.js'
import type { Admission, SlotUser } from '../run/run-host.js'
import { aborted } from '../run/start-failure.js'
import type { SubagentProvider, SubagentRequest, SubagentRunState } from '../types.js'
import { admitChild, checkCapabilities, type Checked, checkRequest, checkTraceContext, isObject, ParentGates, placeInTree, TreeGates } from './checks.js'
import {
  acquireParentSlot, acquireTreeSlot, describeParentSlots, describeTreeSlots, failAllWaiters, parentHeldByIdle, type Slot, treeHeldByIdle,
} from './waiters.js'
import type { SlotHolder } from './slot-holders.js'

// Admission, before the run exists: the request's checks, then its slots and the parent's budget.
// What it lets through is a ticket (`Admitted`): the run's id, and the one place its slots go back.

/**
 * Run ids only need to be unique among the runs of this process: they key the service's `live`
 * map, events and tool metadata here, and never name anything in another process or on disk
 * (an ACP child gets its own session id). A counter per process is unique there, and far cheaper
 * than a random UUID per run; the start time keeps ids of two processes in one log apart.
 */
const RUN_ID_PREFIX = `run-${Date.now().toString(36)}-`
let runCount = 0

function nextRunId(): string {
  return RUN_ID_PREFIX + (++runCount).toString(36)
}

/**
 * A start admission let through. It holds the slots in the gates from admission on (a refusal or a
 * timeout names it by its run id, and by the state of the run once one uses it). A start whose
 * slots were not free has `waiting` until they are taken; its `cancelWait` (the start's cancel)
 * and the caller's signal end that wait.
 */
export class Admitted implements Admission, SlotHolder {
  readonly depth: number
  readonly ceiling: number
  readonly parentBudget?: Budget
  readonly traceContext?: SubagentRequest['traceContext']
  provider: SubagentProvider
  /** While the start waits for its slots: fulfils once they are taken, rejects with the refusal (nothing held then). */
  waiting?: Promise<void>
  /** The run using the slots, once it exists. */
  run?: SlotUser
  /** The tree slot, once taken. */
  slot?: Slot
  private released = false
  private lentBy?: Budget
  private wait?: { controller: AbortController; stop: () => void }

  constructor(
    checked: Checked, readonly id: string, readonly gateKey: object, private readonly callerSignal: AbortSignal,
    private readonly owner: Admissions,
  ) {
    this.depth = checked.depth
    this.ceiling = checked.ceiling
    this.parentBudget = checked.parentBudget
    this.traceContext = checked.traceContext
    this.provider = checked.provider
  }

  get state(): SubagentRunState { return this.run ? this.run.state : 'running' }
  get info(): { readonly label?: string } | undefined { return this.run?.info }

  /** What a wait for slots aborts on: the caller's signal or `cancelWait`. Made on the first wait (most starts never wait). */
  waitSignal(): AbortSignal {
    if (this.wait) return this.wait.controller.signal
    const controller = new AbortController()
    const stop = onAbort(this.callerSignal, () => controller.abort(this.callerSignal.reason))
    this.wait = { controller, stop }
    return controller.signal
  }

  /** The start's cancel while it waits for its slots. */
  cancelWait(reason?: string | Error): void {
    this.wait?.controller.abort(reason instanceof Error ? reason : new SubagentError('ABORTED', reason ?? 'The run was cancelled.'))
  }

  /** The wait is over: lets go of the caller's signal; true when the wait was aborted. */
  endWait(): boolean {
    if (!this.wait) return false
    this.wait.stop()
    return this.wait.controller.signal.aborted
  }

  /** The child's budget. */
  budget?: Budget

  /** Carves the child's budget from the parent's (once the slots are taken); it lends the tree slot to the child's own children. */
  carve(request: SubagentRequest): void {
    const budget = this.budget = this.parentBudget?.child(request.budget)
    if (!budget || !this.slot) return
    this.lentBy = budget
    this.owner.lend(budget, this.slot)
  }

  release(): void {
    if (this.released) return
    this.released = true
    this.owner.free(this, this.slot, this.lentBy)
  }

  refundAndRelease(): void {
    this.parentBudget?.charge('children', -1)
    this.release()
  }
}

export class Admissions {
  private readonly parents = new ParentGates()
  private readonly trees = new TreeGates()
  /** The tree slot each delegated run holds, keyed by its budget: its own children may borrow it. */
  private readonly lent = new WeakMap<Budget, Slot>()
  private stopped = false

  constructor(private readonly config: Config, private readonly providers: ReadonlyMap<string, SubagentProvider>) {}

  /** What is wrong with the request or its place in the tree, before anything waits. */
  check(name: string, request: SubagentRequest): Checked {
    if (this.stopped) throw new SubagentError('NO_PROVIDER', 'The subagents service has stopped.')
    const provider = this.lookup(name, '')
    // What the provider cannot do is reported before what is malformed.
    if (!isObject(request)) throw new SubagentError('INVALID_REQUEST', 'The request must be an object { prompt, parent, signal, ... }.')
    checkCapabilities(provider, request)
    checkRequest(request)
    const traceContext = checkTraceContext(request)
    // Added to the place's own object: a literal with a spread in it takes V8's slow path (≈ 0.2–0.7 µs).
    const checked = placeInTree(request, this.config.maxDepth) as Checked
    checked.traceContext = traceContext
    checked.provider = provider
    return checked
  }

  /**
   * A start's one call: the request's checks (unless `checked` already), the parent's budget, then
   * the per-parent and per-tree slots. Gives the ticket, or throws the refusal with nothing held.
   * Free slots are taken at once (no promise, no tick: the common case); a ticket that waits for
   * them has `waiting`, which rejects on a refusal or an abort (the caller's signal, `cancelWait`)
   * and, once they are taken, looks the provider up again (it may have gone meanwhile).
   */
  admit(name: string, request: SubagentRequest, id?: string, checked = this.check(name, request)): Admitted {
    const { parentBudget } = checked
    if (request.signal.aborted) throw aborted('before the start')
    if (parentBudget) admitChild(parentBudget, request.parent.id, this.config.maxChildren)
    const ticket = new Admitted(checked, id ?? nextRunId(), request.parent, request.signal, this)
    const perParent = Math.min(this.config.maxConcurrentPerParent, request.budget?.maxConcurrent ?? Infinity)
    let taken: Slot | undefined | Promise<Slot | undefined>
    try {
      const root = parentBudget?.root
      const limit = root && Math.min(this.config.maxConcurrent, root.limits.maxConcurrent)
      const tree = root && { root, limit: limit!, lender: this.lent.get(parentBudget!) }
      taken = takeSlots(this.parents, this.trees, { key: ticket.gateKey, parentId: request.parent.id, perParent, tree, holder: ticket })
    } catch (error) {
      this.refused(ticket)
      throw error
    }
    if (!(taken instanceof Promise)) {
      ticket.slot = taken
      try {
        ticket.carve(request)
      } catch (error) {
        ticket.refundAndRelease()
        throw error
      }
      return ticket
    }
    ticket.waiting = taken.then((slot) => this.granted(name, request, ticket, slot), (error: unknown) => {
      this.refused(ticket)
      throw error
    })
    return ticket
  }

  /** Fails every start waiting for a slot (the service stops); later checks refuse `NO_PROVIDER`. */
  stop(error: () => SubagentError): void {
    this.stopped = true
    failAllWaiters(this.trees.trees.values(), error)
    failAllWaiters(this.parents.gates.values(), error)
  }

  /** For `Admitted`: frees its slots in both gates, and its lent tree slot. */
  free(ticket: Admitted, slot: Slot | undefined, lentBy: Budget | undefined): void {
    if (lentBy) this.lent.delete(lentBy)
    if (slot) this.trees.release(ticket.parentBudget!.root, slot)
    this.parents.release(ticket.gateKey, ticket)
  }

  /** For `Admitted`: the child's budget lends its tree slot to the child's own children. */
  lend(budget: Budget, slot: Slot): void {
    this.lent.set(budget, slot)
  }

  /** The slots of a ticket that waited are taken: the provider is looked up again, the wait's abort honoured. */
  private granted(name: string, request: SubagentRequest, ticket: Admitted, slot: Slot | undefined): void {
    ticket.slot = slot
    const abortedMeanwhile = ticket.endWait()
    try {
      if (this.stopped) throw new SubagentError('NO_PROVIDER', 'The subagents service has stopped.')
      ticket.provider = this.lookup(name, ' (it was removed while this start was waiting for a slot)')
      checkCapabilities(ticket.provider, request)
      if (abortedMeanwhile) throw aborted('while the start was waiting for a slot')
      ticket.carve(request)
    } catch (error) {
      ticket.refundAndRelease()
      throw error
    }
  }

  private refused(ticket: Admitted): void {
    ticket.parentBudget?.charge('children', -1)
    ticket.endWait()
  }

  private lookup(name: string, context: string): SubagentProvider {
    const provider = typeof name === 'string' ? this.providers.get(name) : undefined
    if (provider) return provider
    const names = [...this.providers.keys()]
    throw new SubagentError('NO_PROVIDER',
      `No subagent provider named ${JSON.stringify(name)}${context}. Registered providers: ${names.join(', ') || '(none)'}.`)
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
  holder: SlotHolder & { waitSignal(): AbortSignal }
}

/**
 * Takes a per-parent slot and, with a tree, a tree slot; gives the tree slot. Throws `PARKED_LIMIT`
 * at once when every slot of the parent (or of the tree) is held by a parked or interrupted run
 * (only an answer, a wake, a close or `maxParkedMs` frees one: waiting would block the parent that
 * must answer); a wait rejects `ABORTED` naming the holders when the holder's wait signal aborts. Free slots are
 * taken synchronously (no promise, no tick: the common case); a promise only when it waits.
 */
function takeSlots(parents: ParentGates, trees: TreeGates, request: SlotRequest): Slot | undefined | Promise<Slot | undefined> {
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
