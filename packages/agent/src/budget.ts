import type { BudgetBreach, BudgetName } from '@cordis-subagents/tools'

/**
 * Limits of one run and everything below it. Omitted means "no limit of its own" (the parent's
 * remaining budget and the deployment's ceilings still apply).
 */
export interface BudgetLimits {
  /** Model calls of this run and every run below it. */
  maxSteps?: number
  /** Tokens (input + output) of this run and every run below it. */
  maxTokens?: number
  /** Tool calls of this run and every run below it. */
  maxToolCalls?: number
  /** Wall time of this run, children included, in ms. */
  maxWallMs?: number
  /** Delegations started below this run (all depths). */
  maxChildren?: number
  /** Delegated runs of this tree working at once (applies where the tree's root run sets it). */
  maxConcurrent?: number
  /** Deepest depth a run below this one may have (root agents are depth 0). */
  maxDepth?: number
}

/** What a budget node has spent: its own run and every run below it. */
export interface BudgetSpend {
  steps: number
  tokens: number
  toolCalls: number
  children: number
}

/** Budgets checked against spend; `wallMs` and `depth` are checked on their own. */
type Counted = Exclude<BudgetName, 'wallMs' | 'depth'>

const LIMIT_OF: Record<Counted, keyof BudgetLimits> = {
  steps: 'maxSteps',
  tokens: 'maxTokens',
  toolCalls: 'maxToolCalls',
  children: 'maxChildren',
}

export const BUDGET_KEYS = [
  'maxSteps', 'maxTokens', 'maxToolCalls', 'maxWallMs', 'maxChildren', 'maxConcurrent', 'maxDepth',
] as const satisfies readonly (keyof BudgetLimits)[]

/**
 * One run's budget in a delegation tree. A child's limits are carved from what its parent has
 * left when it starts; every spend is charged to the whole ancestor chain, and every check walks
 * it, so a sibling's spend counts against a shared ancestor.
 *
 * Limits are `Infinity` where none applies. Costs are O(depth) per charge or check.
 */
export class Budget {
  readonly parent?: Budget
  readonly root: Budget
  /** The carved limits: min(own, what the parent had left at the start); raised only by `extend`. */
  limits: Readonly<Required<BudgetLimits>>
  readonly spent: BudgetSpend = { steps: 0, tokens: 0, toolCalls: 0, children: 0 }
  /** `Date.now()` after which the wall-time budget is spent (`Infinity`: none). */
  deadline: number
  readonly startedAt: number

  private constructor(parent: Budget | undefined, own: BudgetLimits, now: number) {
    this.parent = parent
    this.root = parent?.root ?? this
    this.startedAt = now
    const left = parent?.remaining(now)
    const pick = (key: keyof BudgetLimits) => Math.min(limitOf(own[key]), left ? left[key] : Infinity)
    const maxWallMs = pick('maxWallMs')
    this.limits = Object.freeze({
      maxSteps: pick('maxSteps'),
      maxTokens: pick('maxTokens'),
      maxToolCalls: pick('maxToolCalls'),
      maxWallMs,
      maxChildren: pick('maxChildren'),
      maxConcurrent: pick('maxConcurrent'),
      maxDepth: pick('maxDepth'),
    })
    this.deadline = now + maxWallMs
  }

  /** A tree's root budget (a root agent's run). */
  static root(limits: BudgetLimits = {}, now = Date.now()): Budget {
    return new Budget(undefined, limits, now)
  }

  /** Carves a child's budget: each limit is min(the child's own, what this run has left). */
  child(own: BudgetLimits = {}, now = Date.now()): Budget {
    return new Budget(this, own, now)
  }

  /** What this run has left of each limit (`Infinity` where none applies). */
  remaining(now = Date.now()): Required<BudgetLimits> {
    const { limits, spent } = this
    return {
      maxSteps: Math.max(0, limits.maxSteps - spent.steps),
      maxTokens: Math.max(0, limits.maxTokens - spent.tokens),
      maxToolCalls: Math.max(0, limits.maxToolCalls - spent.toolCalls),
      maxWallMs: Math.max(0, this.deadline - now),
      maxChildren: Math.max(0, limits.maxChildren - spent.children),
      maxConcurrent: limits.maxConcurrent,
      maxDepth: limits.maxDepth,
    }
  }

  /**
   * The first limit on the chain that `amount` more of `name` would pass, or undefined.
   * For `tokens` (whose next cost is unknown) it asks whether any is left: spent < limit.
   */
  check(name: Counted, amount = 1): BudgetBreach | undefined {
    return this.find(name, amount)?.breach
  }

  /** Wall time: a breach once the nearest deadline on the chain has passed. */
  overtime(now = Date.now()): BudgetBreach | undefined {
    // The carved deadline is never later than any ancestor's, so this node's own answers for the chain.
    if (now < this.deadline) return undefined
    return { budget: 'wallMs', limit: this.limits.maxWallMs, spent: now - this.startedAt }
  }

  /** Adds spend to this run and every ancestor. */
  charge(name: Counted, amount: number): void {
    if (!amount) return
    for (let node: Budget | undefined = this; node; node = node.parent) node.spent[name] += amount
  }

  /**
   * Charges tokens reported as a running total (e.g. by a provider): only the growth beyond what
   * this run has already been charged counts, so a total that includes spend charged on the way
   * (an in-process child) is not counted twice.
   */
  chargeTokensUpTo(total: number): void {
    if (!Number.isFinite(total)) return
    const growth = Math.floor(total) - this.spent.tokens
    if (growth > 0) this.charge('tokens', growth)
  }

  /**
   * Raises the limit behind `breach` by `by` (an operator's budget handler extending a budget) on
   * the run of this chain that holds it. Another ancestor's limit may still bind; callers re-check.
   */
  extend(breach: BudgetBreach, by: number): void {
    if (!Number.isFinite(by) || by <= 0) return
    if (breach.budget === 'depth') return
    if (breach.budget === 'wallMs') {
      // Every run on the chain whose deadline has passed with this one's gets the extension.
      for (let node: Budget | undefined = this; node; node = node.parent) {
        if (node.deadline > this.deadline) continue
        node.deadline += by
        node.limits = Object.freeze({ ...node.limits, maxWallMs: node.limits.maxWallMs + by })
      }
      return
    }
    const name = breach.budget
    const key = LIMIT_OF[name]
    const holder = this.find(name, name === 'tokens' ? 0 : 1)?.node
    if (holder) holder.limits = Object.freeze({ ...holder.limits, [key]: holder.limits[key] + by })
  }

  private find(name: Counted, amount: number): { node: Budget; breach: BudgetBreach } | undefined {
    const key = LIMIT_OF[name]
    for (let node: Budget | undefined = this; node; node = node.parent) {
      const limit = node.limits[key]
      if (limit === Infinity) continue
      const spent = node.spent[name]
      if (name === 'tokens' ? spent >= limit : spent + amount > limit) return { node, breach: { budget: name, limit, spent } }
    }
    return undefined
  }
}

function limitOf(value: number | undefined): number {
  return typeof value === 'number' && value >= 0 ? value : Infinity
}

/** Checks user-supplied limits: each a non-negative safe integer when present. Returns a problem or undefined. */
export function budgetProblem(limits: unknown, where: string): string | undefined {
  if (limits === undefined) return undefined
  if (limits === null || typeof limits !== 'object' || Array.isArray(limits)) return `${where} must be an object of limits.`
  for (const [key, value] of Object.entries(limits)) {
    if (value === undefined) continue
    if (!(BUDGET_KEYS as readonly string[]).includes(key)) {
      return `${where} has an unknown key "${key}"; budgets are ${BUDGET_KEYS.join(', ')}.`
    }
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      return `${where}.${key} must be a non-negative integer, got ${String(value)}.`
    }
  }
  return undefined
}
