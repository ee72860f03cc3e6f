import type { Budget, BudgetLimits } from '@cordis-subagents/agent'
import {
  type BudgetBreach, checkedTraceContext, describeBreach, isCount, isName, missingCapability, NAME_RULE, toolFilterProblem,
} from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type { SubagentProvider, SubagentRequest } from '../types.js'
import type { SlotHolder } from './slot-holders.js'
import type { ParentGate, Slot, Tree } from './waiters.js'

// What a start passes before its run exists: admission's checks, before anything is held (what comes
// in from outside: provider descriptors, start requests, trace context; then the tree limits: the depth
// ceiling, the parent's budget, the delegation count), and the two gates whose free slots it takes (the
// per-parent gate and the tree's). A start whose slots are not free waits in waiters.ts.

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}

function invalidProvider(message: string): never {
  throw new SubagentError('INVALID_PROVIDER', message)
}

export function checkProvider(provider: SubagentProvider) {
  if (!isObject(provider)) invalidProvider('A subagent provider must be an object.')
  const { name } = provider
  if (!isName(name)) {
    invalidProvider(`Invalid subagent provider name ${JSON.stringify(name)}: use ${NAME_RULE}.`)
  }
  if (provider.description !== undefined && typeof provider.description !== 'string') {
    invalidProvider(`Subagent provider "${name}": description must be a string when present.`)
  }
  const { capabilities } = provider
  if (!isObject(capabilities)) {
    invalidProvider(`Subagent provider "${name}": capabilities must be an object { persona, toolFilter, depthLimit } of booleans.`)
  }
  for (const key of ['persona', 'toolFilter', 'depthLimit'] as const) {
    if (typeof capabilities[key] !== 'boolean') {
      invalidProvider(`Subagent provider "${name}": capabilities.${key} must be a boolean.`)
    }
  }
  if (typeof provider.inheritsParentContext !== 'boolean') {
    invalidProvider(`Subagent provider "${name}": inheritsParentContext must be a boolean.`)
  }
  if (typeof provider.start !== 'function') {
    invalidProvider(`Subagent provider "${name}": start must be a function returning a promise of a run.`)
  }
}

function invalidRequest(message: string): never {
  throw new SubagentError('INVALID_REQUEST', message)
}

function isSignal(value: unknown): value is AbortSignal {
  if (value instanceof AbortSignal) return true
  return isObject(value) && typeof value.aborted === 'boolean'
    && typeof value.addEventListener === 'function' && typeof value.removeEventListener === 'function'
}

export function checkRequest(request: SubagentRequest) {
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
  if (request.label !== undefined && typeof request.label !== 'string') {
    invalidRequest('request.label must be a string when present.')
  }
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
  if (request.onUpdate !== undefined && typeof request.onUpdate !== 'function') {
    invalidRequest('request.onUpdate must be a function when present.')
  }
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

export function checkCapabilities(provider: SubagentProvider, request: SubagentRequest) {
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
export function checkTraceContext(request: SubagentRequest): SubagentRequest['traceContext'] {
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

/** Where a child of the request's parent would stand in its tree. */
export interface TreePlace {
  depth: number
  parentBudget?: Budget
  /** The deepest depth allowed below this parent. */
  ceiling: number
}

/** A request that passed the service's checks: its place in the tree, its checked trace context, its provider. */
export interface Checked extends TreePlace {
  traceContext?: SubagentRequest['traceContext']
  provider: SubagentProvider
}

/** The child's depth, the parent's budget and the depth ceiling; `DEPTH_EXCEEDED` when the child would pass it. */
export function placeInTree(request: SubagentRequest, deploymentMaxDepth: number): TreePlace {
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

function depthCeiling(
  deployment: number, requested: number | undefined, budget: Budget | undefined,
): { max: number; source: string } {
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
export function admitChild(budget: Budget, parentId: string, maxChildren: number): void {
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
