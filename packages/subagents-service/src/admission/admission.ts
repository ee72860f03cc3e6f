import type { Budget, BudgetLimits } from '@cordis-subagents/agent'
import {
  type BudgetBreach, checkedTraceContext, describeBreach, isCount, isName, missingCapability, NAME_RULE, onAbort, toolFilterProblem,
} from '@cordis-subagents/shared'
import type { Config } from '../config.js'
import { SubagentError } from '../errors.js'
import type { Admission, SlotUser } from '../run/run-host.js'
import { aborted } from '../run/start-failure.js'
import type { SubagentProvider, SubagentRequest, SubagentRunState } from '../types.js'
import { ParentGates, takeSlots, TreeGates } from './gates.js'
import type { SlotHolder } from './slot-holders.js'
import { failAllWaiters, type Slot } from './waiters.js'

// Admission, before the run exists: the checks of what comes in from outside (the request, trace context), the
// tree limits (the depth ceiling, the parent's budget, the delegation count), then the slots (gates.ts). What it
// lets through is a ticket (`Admitted`): the run's id, and the one place its slots go back.

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}

function invalidRequest(message: string): never { throw new SubagentError('INVALID_REQUEST', message) }

function isSignal(value: unknown): value is AbortSignal {
  if (value instanceof AbortSignal) return true
  return isObject(value) && typeof value.aborted === 'boolean'
    && typeof value.addEventListener === 'function' && typeof value.removeEventListener === 'function'
}

function checkRequest(request: SubagentRequest) {
  if (!isObject(request)) invalidRequest('The subagent request must be an object.')
  if (typeof request.prompt !== 'string' || !request.prompt.trim()) {
    invalidRequest('request.prompt must be a non-empty string: the task for the child.')
  }
  const { parent } = request
  if (!isObject(parent) || typeof parent.id !== 'string' || !parent.id
    || !Number.isInteger(parent.depth) || parent.depth < 0) {
    invalidRequest('request.parent must be the calling Agent (with a string id and a non-negative integer depth).')
  }
  if (!isSignal(request.signal)) invalidRequest('request.signal must be an AbortSignal.')
  if (request.label !== undefined && typeof request.label !== 'string') invalidRequest('request.label must be a string when present.')
  if (request.persona !== undefined && (typeof request.persona !== 'string' || !request.persona.trim())) {
    invalidRequest('request.persona must be a non-empty string when present; omit it for the default persona.')
  }
  if (request.agentOptions !== undefined) {
    if (!isObject(request.agentOptions)) invalidRequest('request.agentOptions must be an object when present.')
    const { model, name } = request.agentOptions
    if (model !== undefined && (typeof model !== 'string' || !model)) {
      invalidRequest('request.agentOptions.model must be a non-empty model ref when present.')
    }
    if (name !== undefined && !isName(name)) invalidRequest(`request.agentOptions.name must be ${NAME_RULE} when present.`)
  }
  if (request.toolFilter !== undefined) {
    const problem = toolFilterProblem(request.toolFilter, 'request.toolFilter', true)
    if (problem) invalidRequest(problem)
  }
  if (request.maxDepth !== undefined && (!Number.isInteger(request.maxDepth) || request.maxDepth < 0)) {
    invalidRequest(`request.maxDepth must be a non-negative integer, got ${String(request.maxDepth)}.`)
  }
  if (request.budget !== undefined) checkBudget(request.budget)
  if (request.resume !== undefined && typeof request.resume !== 'boolean') invalidRequest('request.resume must be a boolean when present.')
  if (request.toolCallId !== undefined && typeof request.toolCallId !== 'string') {
    invalidRequest('request.toolCallId must be a string when present (the id of the delegating tool call).')
  }
  if (request.onUpdate !== undefined && typeof request.onUpdate !== 'function') invalidRequest('request.onUpdate must be a function when present.')
}

const BUDGET_KEYS = ['maxSteps', 'maxTokens', 'maxToolCalls', 'maxWallMs', 'maxChildren', 'maxConcurrent', 'maxDepth']

function checkBudget(budget: BudgetLimits) {
  if (!isObject(budget) || Array.isArray(budget)) invalidRequest('request.budget must be an object of limits.')
  for (const [key, value] of Object.entries(budget)) {
    if (value === undefined) continue
    if (!BUDGET_KEYS.includes(key)) invalidRequest(`request.budget has an unknown key "${key}"; budgets are ${BUDGET_KEYS.join(', ')}.`)
    if (!isCount(value)) invalidRequest(`request.budget.${key} must be a non-negative integer, got ${String(value)}.`)
    // 0 would make every start wait forever in the gate.
    if (key === 'maxConcurrent' && value < 1) invalidRequest(`request.budget.maxConcurrent must be at least 1, got ${value}.`)
  }
}

function checkCapabilities(provider: SubagentProvider, request: SubagentRequest) {
  const missing = missingCapability(provider.capabilities, request)
  if (!missing) return
  const { capability, option } = missing
  throw new SubagentError('UNSUPPORTED_CAPABILITY',
    `Subagent provider "${provider.name}" does not support ${option} (capability "${capability}"); remove ${option} from the request or use a provider that has it.`,
    { capability })
}

/**
 * The request's trace context as a checked plain copy (what the provider gets), or undefined
 * without one; `INVALID_REQUEST` when malformed. Read once, so what was checked is what is passed on.
 */
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

/** A request that passed the checks: its place in the tree (`ceiling`: the deepest depth below its parent), trace context, provider. */
export interface Checked {
  depth: number
  parentBudget?: Budget
  ceiling: number
  traceContext?: SubagentRequest['traceContext']
  provider: SubagentProvider
}

/** The child's depth, the parent's budget and the depth ceiling; `DEPTH_EXCEEDED` when the child would pass it. */
function placeInTree(request: SubagentRequest, deploymentMaxDepth: number): Omit<Checked, 'provider'> {
  const depth = request.parent.depth + 1
  const parentBudget = budgetOf(request.parent)
  const ceiling = depthCeiling(deploymentMaxDepth, request.maxDepth, parentBudget)
  if (depth > ceiling.max) {
    throw new SubagentError('DEPTH_EXCEEDED',
      `A child of "${request.parent.id}" would have depth ${depth}, more than ${ceiling.source} ${ceiling.max}; answer without delegating further.`,
      { attempted: depth, max: ceiling.max })
  }
  return { depth, parentBudget, ceiling: ceiling.max }
}

function depthCeiling(deployment: number, requested: number | undefined, budget: Budget | undefined): { max: number; source: string } {
  let ceiling = { max: deployment, source: 'the deployment\'s maxDepth' }
  if (requested !== undefined && requested < ceiling.max) ceiling = { max: requested, source: 'maxDepth' }
  const tree = budget?.limits.maxDepth
  if (tree !== undefined && tree < ceiling.max) ceiling = { max: tree, source: 'the tree budget\'s maxDepth' }
  return ceiling
}

/**
 * Refuses a start the parent's tree budget cannot pay for (`BUDGET_EXCEEDED`: its steps, tokens
 * or time are spent, or the tree started `maxChildren` delegations); otherwise counts the delegation.
 */
function admitChild(budget: Budget, parentId: string, maxChildren: number): void {
  const spent = budget.overtime() ?? budget.check('steps', 1) ?? budget.check('tokens')
  if (spent) {
    throw new SubagentError('BUDGET_EXCEEDED',
      `"${parentId}" cannot delegate: ${describeBreach(spent)} is spent. Answer with what you have.`, { breach: spent })
  }
  const treeTotal = budget.root.spent.children
  const breach: BudgetBreach | undefined = budget.check('children', 1)
    ?? (treeTotal + 1 > maxChildren ? { budget: 'children', limit: maxChildren, spent: treeTotal } : undefined)
  if (breach) {
    throw new SubagentError('BUDGET_EXCEEDED',
      `"${parentId}" cannot delegate: ${describeBreach(breach)} is reached in this delegation tree. Do the rest yourself, or answer with what you have.`,
      { breach })
  }
  budget.charge('children', 1)
}

/**
 * Run ids only need to be unique among the runs of this process (an ACP child gets its own session id): a
 * counter is, and far cheaper than a random UUID per run; the start time keeps two processes' ids in one log apart.
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
  run?: SlotUser
  slot?: Slot
  budget?: Budget
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

  refundAndRelease(): void {
    this.parentBudget?.charge('children', -1)
    this.release()
  }
}

export class Admissions {
  private readonly parents = new ParentGates()
  private readonly trees = new TreeGates()
  /** @internal The tree slot each delegated run holds, keyed by its budget: its own children may borrow it. */
  readonly lent = new WeakMap<Budget, Slot>()
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
   * A start's one call: the checks (unless `checked` already), the parent's budget, then the slots: the ticket, or
   * the refusal with nothing held. Free slots are taken at once (no promise, no tick: the common case); a ticket that
   * waits has `waiting`, which rejects on a refusal or an abort and, once they are taken, looks the provider up again.
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
    throw new SubagentError('NO_PROVIDER', `No subagent provider named ${JSON.stringify(name)}${context}. `
      + `Registered providers: ${[...this.providers.keys()].join(', ') || '(none)'}.`)
  }
}

