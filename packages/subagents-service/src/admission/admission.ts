import { randomBytes } from 'node:crypto'
import type { Budget } from '@cordis-subagents/agent'
import {
  type AbortScope, type BudgetBreach, checkedTraceContext, isAbortScope, isName, isObject, missingCapability, NAME_RULE, toolFilterProblem,
} from '@cordis-subagents/shared'
import type { Config } from '../config.js'
import { SubagentError } from '../errors.js'
import { Delegation, noop } from '../run/delegation.js'
import { PendingStart } from '../run/pending-start.js'
import type { Admission, Checked, RunHost, SideRoad, SlotUser } from '../run/run-host.js'
import { aborted } from '../run/start-failure.js'
import type { BeginOptions, SubagentProvider, SubagentRequest, SubagentRunState, SubagentStart } from '../types.js'
import { budgetExceeded, checkBudget, depthExceeded, invalidRequest, noProvider, unsupported } from './refusals.js'
import type { SlotHolder } from './slot-holders.js'
import {
  giveBackLent, granted, handOnParentSlot, type ParentGate, refused, type Slot, type SlotRequest, type Tree, waitForParentSlot,
  waitForTreeSlot, type WaitingHolder,
} from './waiters.js'

// Where every start begins (`ctx.subagents.begin`): admission, before the run exists (the checks of the request, the
// tree limits, the free slots of the two gates; a wait: waiters.ts), then the run made from the ticket it lets through.

function isSignal(value: unknown): value is AbortSignal {
  return value instanceof AbortSignal || (isObject(value) && typeof value.aborted === 'boolean'
    && typeof value.addEventListener === 'function' && typeof value.removeEventListener === 'function')
}

function checkRequest(request: SubagentRequest) {
  if (!isObject(request)) invalidRequest('The subagent request must be an object.')
  if (typeof request.prompt !== 'string' || !request.prompt.trim()) invalidRequest('request.prompt must be a non-empty string: the task for the child.')
  const { parent } = request
  if (!isObject(parent) || typeof parent.id !== 'string' || !parent.id || !Number.isInteger(parent.depth) || parent.depth < 0) {
    invalidRequest('request.parent must be the calling Agent (with a string id and a non-negative integer depth).')
  }
  if (request.abortScope !== undefined ? !isAbortScope(request.abortScope) : !isSignal(request.signal)) invalidRequest('request.signal must be an AbortSignal (or request.abortScope an AbortScope).')
  if (request.label !== undefined && typeof request.label !== 'string') invalidRequest('request.label must be a string when present.')
  if (request.persona !== undefined && (typeof request.persona !== 'string' || !request.persona.trim())) invalidRequest('request.persona must be a non-empty string when present; omit it for the default persona.')
  if (request.agentOptions !== undefined) {
    if (!isObject(request.agentOptions)) invalidRequest('request.agentOptions must be an object when present.')
    const { model, name } = request.agentOptions
    if (model !== undefined && (typeof model !== 'string' || !model)) invalidRequest('request.agentOptions.model must be a non-empty model ref when present.')
    if (name !== undefined && !isName(name)) invalidRequest(`request.agentOptions.name must be ${NAME_RULE} when present.`)
  }
  const filterProblem = request.toolFilter !== undefined && toolFilterProblem(request.toolFilter, 'request.toolFilter', true)
  if (filterProblem) invalidRequest(filterProblem)
  if (request.maxDepth !== undefined && (!Number.isInteger(request.maxDepth) || request.maxDepth < 0)) invalidRequest(`request.maxDepth must be a non-negative integer, got ${String(request.maxDepth)}.`)
  if (request.budget !== undefined) checkBudget(request.budget)
  if (request.resume !== undefined && typeof request.resume !== 'boolean') invalidRequest('request.resume must be a boolean when present.')
  if (request.toolCallId !== undefined && typeof request.toolCallId !== 'string') invalidRequest('request.toolCallId must be a string when present (the id of the delegating tool call).')
  if (request.onUpdate !== undefined && typeof request.onUpdate !== 'function') invalidRequest('request.onUpdate must be a function when present.')
}

function checkCapabilities(provider: SubagentProvider, request: SubagentRequest): SubagentProvider {
  const missing = missingCapability(provider.capabilities, request)
  return missing ? unsupported(provider, missing) : provider
}

/** The request's trace context as a checked plain copy, or undefined; read once, so what was checked is what is passed on. */
function checkTraceContext(request: SubagentRequest): SubagentRequest['traceContext'] {
  if (request.traceContext === undefined) return undefined
  const checked = checkedTraceContext(request.traceContext, 'request.traceContext')
  if ('problem' in checked) invalidRequest(`${checked.problem} Omit it when there is no trace to continue.`)
  return checked.context
}

/** The parent's live budget, when it has one (agents of `ctx.agents` do). */
function budgetOf(parent: SubagentRequest['parent']): Budget | undefined {
  const budget = (parent as { budget?: unknown }).budget as Budget | undefined
  return budget && typeof budget.child === 'function' && typeof budget.check === 'function' ? budget : undefined
}

/** The child's depth, the parent's budget and the depth ceiling; `DEPTH_EXCEEDED` when the child would pass it. */
function placeInTree(request: SubagentRequest, deploymentMaxDepth: number): Omit<Checked, 'provider'> {
  const depth = request.parent.depth + 1
  const parentBudget = budgetOf(request.parent)
  const ceiling = depthCeiling(deploymentMaxDepth, request.maxDepth, parentBudget)
  if (depth > ceiling.max) depthExceeded(request, depth, ceiling)
  return { depth, parentBudget, ceiling: ceiling.max }
}

function depthCeiling(deployment: number, requested: number | undefined, budget: Budget | undefined): { max: number; source: string } {
  let ceiling = { max: deployment, source: 'the deployment\'s maxDepth' }
  if (requested !== undefined && requested < ceiling.max) ceiling = { max: requested, source: 'maxDepth' }
  const tree = budget?.limits.maxDepth
  if (tree !== undefined && tree < ceiling.max) ceiling = { max: tree, source: 'the tree budget\'s maxDepth' }
  return ceiling
}

/** Refuses a start the parent's tree budget cannot pay for (its steps, tokens or time, or `maxChildren`); else counts it. */
function admitChild(budget: Budget, parentId: string, maxChildren: number): void {
  const spent = budget.overtime() ?? budget.check('steps', 1) ?? budget.check('tokens')
  if (spent) budgetExceeded(parentId, spent)
  const treeTotal = budget.root.spent.children
  const breach: BudgetBreach | undefined = budget.check('children', 1)
    ?? (treeTotal + 1 > maxChildren ? { budget: 'children', limit: maxChildren, spent: treeTotal } : undefined)
  if (breach) budgetExceeded(parentId, undefined, breach)
  budget.charge('children', 1)
}

/**
 * How many children one parent may have live at once: a FIFO gate per parent object (not its id: ids may repeat across
 * agent runtimes). A slot is held from admission until the run is disposed, parked and interrupted runs included.
 */
class ParentGates {
  /** @internal */ readonly gates = new Map<object, ParentGate>()

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
    if (gate.queue.length) return handOnParentSlot(gate)
    if (--gate.active <= 0) this.gates.delete(key)
  }

  /** @internal the gate of `key` (made on first use). */
  gate(key: object): ParentGate {
    let gate = this.gates.get(key)
    if (!gate) this.gates.set(key, gate = { active: 0, queue: [], holders: new Set() })
    return gate
  }
}

/**
 * How many delegated runs of one tree may work at once, without the nested deadlock a plain semaphore has: a parent
 * that waits on its own children must not hold the slot they need. A parent in a tool call makes no model calls until
 * it returns, so it lends its slot to its first waiting child (and, as each borrower ends, to its next one) instead of
 * keeping it idle. Only runs that hold a slot and have not lent it are working; every other start waits FIFO.
 */
export class TreeGates {
  /** @internal */ readonly trees = new Map<object, Tree>()

  /** The slot `acquire` would resolve with at once (the parent's to lend, or a free one); undefined when it would wait. */
  tryAcquire(tree: object, limit: number, parent: Slot | undefined, holder?: SlotHolder): Slot | undefined {
    if (parent && !parent.lent) {
      parent.lent = true
      return new HeldSlot(holder, parent)
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
    if (slot.lender) return giveBackLent(entry, slot as Slot & { lender: Slot })
    if (!entry) return
    entry.own.delete(slot)
    const next = entry.queue.shift()
    // A waiter's parent is always lending already (else it would have borrowed at once): hand the slot on.
    if (next) return next.grant(this.own(entry, next.holder))
    entry.active--
    this.forget(tree)
  }

  private own(entry: Tree, holder: SlotHolder | undefined): Slot {
    const slot = new HeldSlot(holder)
    entry.own.add(slot)
    return slot
  }

  /** @internal drops `tree`'s entry once nothing holds or waits for a slot. */
  forget(tree: object) {
    const entry = this.trees.get(tree)
    if (entry && entry.active <= 0 && !entry.queue.length) this.trees.delete(tree)
  }
}

/** A class, not a literal: a slot names its run, and V8 may make a literal site's objects old from birth (run/delegation.ts). */
class HeldSlot implements Slot { lent = false; constructor(readonly holder?: SlotHolder, readonly lender?: Slot) {} }
/** Takes a per-parent slot and, with a tree, a tree slot; gives the tree slot: synchronously when free, a promise when it waits. */
function takeSlots(parents: ParentGates, trees: TreeGates, request: SlotRequest): Slot | undefined | Promise<Slot | undefined> {
  if (parents.tryAcquire(request.key, request.perParent, request.holder)) return treeSlot(parents, trees, request)
  return waitForParentSlot(parents, request, () => treeSlot(parents, trees, request))
}

function treeSlot(parents: ParentGates, trees: TreeGates, request: SlotRequest): Slot | undefined | Promise<Slot> {
  const { tree } = request
  if (!tree) return undefined
  return trees.tryAcquire(tree.root, tree.limit, tree.lender, request.holder) ?? waitForTreeSlot(parents, trees, request)
}

// A counter per run (far cheaper than a UUID each) after a prefix per process: its start time, and random bytes since a run
// id is the key of the checkpoint store that hosts on one database share (processes started in one millisecond collided).
const RUN_ID_PREFIX = `run-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}-`
let runCount = 0
const nextRunId = (): string => RUN_ID_PREFIX + (++runCount).toString(36)

/**
 * A start admission let through: it holds the slots from admission on (a refusal or a timeout names it by its run id,
 * and by its run's state once one uses it). A start whose slots were not free has `waiting` until they are taken.
 */
export class Admitted implements Admission, WaitingHolder {
  readonly depth: number
  readonly ceiling: number
  readonly parentBudget?: Budget
  readonly traceContext?: SubagentRequest['traceContext']
  provider: SubagentProvider
  /** While the start waits for its slots: fulfils once they are taken, rejects with the refusal (nothing held then). */
  waiting?: Promise<void>
  run?: SlotUser
  slot?: Slot
  budget?: Budget
  private released = false
  private lentBy?: Budget
  wait?: { controller: AbortController; stop: () => void }

  constructor(
    checked: Checked, readonly id: string, readonly gateKey: object, readonly caller: AbortSignal | AbortScope,
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

  /** Carves the child's budget from the parent's (once the slots are taken); it lends the tree slot to the child's own children. */
  carve(request: SubagentRequest): void {
    const budget = this.budget = this.parentBudget?.child(request.budget)
    if (!budget || !this.slot) return
    this.lentBy = budget
    this.owner.lent.set(budget, this.slot)
  }

  release(): void {
    if (this.released) return
    this.released = true
    this.owner.free(this, this.slot, this.lentBy)
  }

  refundAndRelease(): void { this.parentBudget?.charge('children', -1); this.release() }
}

export class Admissions {
  /** @internal */ readonly parents = new ParentGates()
  /** @internal */ readonly trees = new TreeGates()
  /** @internal The tree slot each delegated run holds, keyed by its budget: its own children may borrow it. */
  readonly lent = new WeakMap<Budget, Slot>()
  /** @internal set by `stopAdmissions` (waiters.ts) */ stopped = false

  /** `offRoad`: the service's start of a continue, a restore or a reattach (it admits and runs through `admit` and `run`). */
  constructor(
    private readonly config: Config, private readonly providers: ReadonlyMap<string, SubagentProvider>, private readonly host: RunHost,
    private readonly offRoad: (name: string, request: SubagentRequest, options: BeginOptions) => SubagentStart,
  ) {}

  /** `ctx.subagents.begin` (documented there): a plain start is admitted, then run; nothing is left held on a refusal. */
  readonly begin = (name: string, request: SubagentRequest, options: BeginOptions = {}): SubagentStart => {
    const reattach = (request as { reattach?: unknown } | undefined)?.reattach === true
    if (options.continues || options.restore || reattach) return this.offRoad(name, request, options)
    let ticket: Admitted
    try {
      ticket = this.admit(name, request)
    } catch (error) {
      return { handle: Promise.reject(error), cancel: noop }
    }
    return this.run(ticket, request)
  }

  /** The run of `ticket`, made once (through `PendingStart` while it waits for its slots). */
  run(ticket: Admitted, request: SubagentRequest, side?: SideRoad): Delegation | PendingStart {
    // The provider gets the checked copy of the trace context, never the caller's object.
    if (ticket.traceContext) request = { ...request, traceContext: ticket.traceContext }
    return ticket.waiting ? new PendingStart(request, this.host, ticket, side) : new Delegation(request, this.host, ticket, side)
  }

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
   * A start's one call: the checks (unless `checked` already), the parent's budget, the slots: the ticket, or the refusal
   * with nothing held. A ticket that waits has `waiting`, rejecting on a refusal or an abort (waiters.ts).
   */
  admit(name: string, request: SubagentRequest, id?: string, checked = this.check(name, request)): Admitted {
    const { parentBudget } = checked
    if ((request.abortScope ?? request.signal).aborted) throw aborted('before the start')
    if (parentBudget) admitChild(parentBudget, request.parent.id, this.config.maxChildren)
    const ticket = new Admitted(checked, id ?? nextRunId(), request.parent, request.abortScope ?? request.signal, this)
    const perParent = Math.min(this.config.maxConcurrentPerParent, request.budget?.maxConcurrent ?? Infinity)
    let taken: Slot | undefined | Promise<Slot | undefined>
    try {
      const root = parentBudget?.root
      const limit = root && Math.min(this.config.maxConcurrent, root.limits.maxConcurrent)
      const tree = root && { root, limit: limit!, lender: this.lent.get(parentBudget!) }
      taken = takeSlots(this.parents, this.trees, { key: ticket.gateKey, parentId: request.parent.id, perParent, tree, holder: ticket })
    } catch (error) {
      refused(ticket)
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
    ticket.waiting = taken.then((slot) => granted(this, name, request, ticket, slot), (error: unknown) => {
      refused(ticket)
      throw error
    })
    return ticket
  }

  /** For `Admitted`: frees its slots in both gates, and its lent tree slot. */
  free(ticket: Admitted, slot: Slot | undefined, lentBy: Budget | undefined): void {
    if (lentBy) this.lent.delete(lentBy)
    if (slot) this.trees.release(ticket.parentBudget!.root, slot)
    this.parents.release(ticket.gateKey, ticket)
  }

  /** @internal the provider named `name` (with `request`: checked for what it asks of the provider). */
  lookup(name: string, context: string, request?: SubagentRequest): SubagentProvider {
    const provider = typeof name === 'string' ? this.providers.get(name) : undefined
    if (provider) return request ? checkCapabilities(provider, request) : provider
    return noProvider(name, context, this.providers)
  }
}
