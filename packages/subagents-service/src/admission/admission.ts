import type { Budget } from '@cordis-subagents/agent'
import type { Config } from '../config.js'
import { SubagentError } from '../errors.js'
import { aborted } from '../run/start-failure.js'
import type { SubagentProvider, SubagentRequest } from '../types.js'
import { checkCapabilities, checkRequest, checkTraceContext, isObject } from '../validate.js'
import { admitChild, type Checked, placeInTree } from './limits.js'
import { ParentGates } from './parent-gate.js'
import { takeSlots } from './take-slots.js'
import { Admitted, nextRunId, type SlotOwner } from './ticket.js'
import { type Slot, TreeGates } from './tree-gate.js'

// Admission, before the run exists: the request's checks, then its slots and the parent's budget.
// What it lets through is a ticket (`Admitted`, ticket.ts), the one place its slots go back.

export class Admissions implements SlotOwner {
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
    return { ...placeInTree(request, this.config.maxDepth), traceContext, provider }
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
    this.trees.failAll(error)
    this.parents.failAll(error)
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
