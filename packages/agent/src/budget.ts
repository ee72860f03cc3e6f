import { addCounts, type BudgetBreach, type BudgetName, MAX_REPORTED_COUNT } from '@cordis-subagents/shared'
import type { BudgetLimits, BudgetSpend, GateTarget, GenerateRequest, GenerateResponse } from './types.js'
import type { Endpoint } from './endpoint.js'

/** Budgets checked against spend; `wallMs` and `depth` are checked on their own. */
type Counted = Exclude<BudgetName, 'wallMs' | 'depth'>

const COUNTED: readonly Counted[] = ['steps', 'tokens', 'toolCalls', 'children']

const LIMIT_OF: Record<Counted, 'maxSteps' | 'maxTokens' | 'maxToolCalls' | 'maxChildren'> = {
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
 * left when it starts (it never gets more); spend is charged to every run above it that holds a
 * limit of its own, and checks walk those runs, so a sibling's spend counts against a shared
 * ancestor.
 *
 * A carved limit never binds before the limit it was carved from (the child's spend is part of
 * the ancestor's), so only runs whose own limit is tighter than what they were carved from are
 * "binding" and visited: a check or a charge costs O(binding runs on the chain), not O(depth).
 */
export class Budget {
  readonly parent?: Budget
  readonly root: Budget
  /** The carved limits: min(own, what the parent had left at the start); raised only by `extend`. Infinity: none. */
  limits: Readonly<Required<BudgetLimits>>
  /**
   * What was charged here: this run's own spend, plus its descendants' for each budget this run
   * holds a limit of its own for (and always at the tree's root, which counts the whole tree).
   */
  readonly spent: BudgetSpend = { steps: 0, tokens: 0, toolCalls: 0, children: 0 }
  readonly startedAt: number
  /** Per counted budget: the nearest run on the chain (this one included) holding a limit of its own. */
  private readonly binding: Record<Counted, Budget | undefined>
  /** The nearest run on the chain (this one included) whose own wall-time limit is tighter than what it was carved from. */
  private readonly wallHolder: Budget | undefined
  /** This run's own deadline (`Date.now()` based), where it holds one; raised only by `extend`. */
  private ownDeadline: number
  /** An in-process agent spends from this budget itself; reported totals are then not charged again. */
  private adopted = false
  /** Time this run's turn spent parked: moved out of its own deadline and its reported wall time. */
  private pausedMs = 0
  /** On a tree's root: told after every charge anywhere in the tree (a served agent reporting its spend). */
  private watcher?: (spent: Readonly<BudgetSpend>) => void
  /** Budgets a report from outside charged here at MAX_REPORTED_COUNT (it claimed that much or more). */
  private clamped?: Set<Counted>

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
    const ownDeadline = now + limitOf(own.maxWallMs)
    const inherited = parent ? parent.deadline : Infinity
    const holdsWall = parent ? ownDeadline < inherited : ownDeadline !== Infinity
    this.ownDeadline = holdsWall ? ownDeadline : Infinity
    this.wallHolder = holdsWall ? this : parent?.wallHolder
    const binding = {} as Record<Counted, Budget | undefined>
    for (const name of COUNTED) {
      const key = LIMIT_OF[name]
      const tighter = parent ? limitOf(own[key]) < left![key] : this.limits[key] !== Infinity
      binding[name] = tighter ? this : parent?.binding[name]
    }
    this.binding = binding
  }

  /** A tree's root budget (a root agent's run). */
  static root(limits: BudgetLimits = {}, now = Date.now()): Budget {
    return new Budget(undefined, limits, now)
  }

  /** Carves a child's budget: each limit is min(the child's own, what this run has left). */
  child(own: BudgetLimits = {}, now = Date.now()): Budget {
    return new Budget(this, own, now)
  }

  /** Marks this budget as spent by an in-process agent directly (see `chargeTokensUpTo`). */
  adopt(): void {
    this.adopted = true
  }

  /** Whether an in-process agent spends from this budget itself (it checks before it spends; nothing is reported). */
  get spentInProcess(): boolean {
    return this.adopted
  }

  /** What this run has left of each limit (`Infinity` where none applies), siblings' spend included. */
  remaining(now = Date.now()): Required<BudgetLimits> {
    const left = (name: Counted) => {
      let min = Infinity
      for (let node = this.binding[name]; node; node = node.parent?.binding[name]) {
        min = Math.min(min, node.limits[LIMIT_OF[name]] - node.spent[name])
      }
      return Math.max(0, min)
    }
    return {
      maxSteps: left('steps'),
      maxTokens: left('tokens'),
      maxToolCalls: left('toolCalls'),
      maxWallMs: Math.max(0, this.deadline - now),
      maxChildren: left('children'),
      maxConcurrent: this.limits.maxConcurrent,
      maxDepth: this.limits.maxDepth,
    }
  }

  /**
   * The first limit on the chain that `amount` more of `name` would pass, or undefined.
   * For `tokens` (whose next cost is unknown) it asks whether any is left: spent < limit.
   */
  check(name: Counted, amount = 1): BudgetBreach | undefined {
    return this.find(name, amount)?.breach
  }

  /**
   * `Date.now()` after which this run's wall time is spent (`Infinity`: never): the nearest
   * deadline of the runs on the chain that hold one, so an extension of an ancestor's is seen here.
   */
  get deadline(): number {
    let deadline = Infinity
    for (let node = this.wallHolder; node; node = node.parent?.wallHolder) deadline = Math.min(deadline, node.ownDeadline)
    return deadline
  }

  /** Whether this run holds a wall-time limit of its own (then it arms the timer for it). */
  get holdsWallTime(): boolean {
    return this.wallHolder === this
  }

  /** Wall time: a breach once a deadline on the chain has passed, naming the run that holds it. */
  overtime(now = Date.now()): BudgetBreach | undefined {
    const node = this.wallBreach(now)
    return node && { budget: 'wallMs', limit: node.limits.maxWallMs, spent: now - node.startedAt - node.pausedMs }
  }

  private wallBreach(now: number): Budget | undefined {
    for (let node = this.wallHolder; node; node = node.parent?.wallHolder) if (now >= node.ownDeadline) return node
    return undefined
  }

  /**
   * Moves this run's own deadline `ms` later: the time its turn was parked on a question does not
   * count toward its wall time. Runs that inherit the deadline see it through `deadline`.
   */
  pauseClock(ms: number): void {
    if (!(ms > 0) || this.ownDeadline === Infinity) return
    this.ownDeadline += ms
    this.pausedMs += ms
  }

  /** Adds spend to this run, to every run above holding a limit for it, and to the tree's root. */
  charge(name: Counted, amount: number): void {
    if (!amount) return
    // Saturating: however many reports a tree sums, spend stays a safe integer.
    this.spent[name] = addCounts(this.spent[name], amount)
    let rootCharged = this === this.root
    for (let node = this.binding[name]; node; node = node.parent?.binding[name]) {
      if (node === this) continue
      node.spent[name] = addCounts(node.spent[name], amount)
      if (node === this.root) rootCharged = true
    }
    if (!rootCharged) this.root.spent[name] = addCounts(this.root.spent[name], amount)
    this.root.watcher?.(this.root.spent)
  }

  /**
   * Calls `listener` with the tree's spend after every charge anywhere in the tree (on the root's
   * spend, synchronously: a listener that sends it elsewhere should coalesce). One listener per
   * tree; returns the function that removes it.
   */
  watch(listener: (spent: Readonly<BudgetSpend>) => void): () => void {
    const root = this.root
    root.watcher = listener
    return () => {
      if (root.watcher === listener) root.watcher = undefined
    }
  }

  /**
   * Charges tokens reported as a running total (by a provider whose child runs elsewhere): only
   * the growth beyond what was reported before counts. A no-op when an in-process agent spends
   * from this budget itself: its tokens were charged as they were spent.
   */
  chargeTokensUpTo(total: number): void {
    this.chargeUpTo('tokens', total)
  }

  /**
   * Charges any counted budget reported as a running total (steps, tool calls and delegations a
   * child elsewhere reports with its tokens): only the growth beyond this run's spend counts. A
   * total is clamped to MAX_REPORTED_COUNT (and `exceeded` then says so). A no-op for a budget an
   * in-process agent spends from itself.
   */
  chargeUpTo(name: Counted, total: number): void {
    if (this.adopted || !Number.isFinite(total)) return
    if (total >= MAX_REPORTED_COUNT) (this.clamped ??= new Set()).add(name)
    const growth = Math.min(Math.floor(total), MAX_REPORTED_COUNT) - this.spent[name]
    if (growth > 0) this.charge(name, growth)
  }

  /**
   * The first counted limit on the chain that spend has passed (spent > limit), or undefined. An
   * agent of this process never passes one (it checks before it spends); a child elsewhere reports
   * its spend after the fact, so its parent asks this to stop it once the tree is overspent.
   */
  exceeded(): BudgetBreach | undefined {
    for (const name of COUNTED) {
      for (let node = this.binding[name]; node; node = node.parent?.binding[name]) {
        const limit = node.limits[LIMIT_OF[name]]
        if (node.spent[name] <= limit) continue
        return { budget: name, limit, spent: node.spent[name], ...this.clamped?.has(name) ? { clamped: true } : {} }
      }
    }
    return undefined
  }

  /**
   * Raises the limit behind `breach` by `by` (an operator's budget handler extending a budget) on
   * the run of this chain that holds it. Another ancestor's limit may still bind; callers re-check.
   */
  extend(breach: BudgetBreach, by: number): void {
    if (!Number.isFinite(by) || by <= 0) return
    if (breach.budget === 'depth') return
    if (breach.budget === 'wallMs') {
      // Only the run holding the deadline that passed: runs below it that inherit it see the
      // extension through `deadline`; no other run's limit changes.
      const holder = this.wallBreach(Date.now())
      if (!holder) return
      holder.ownDeadline += by
      holder.limits = Object.freeze({ ...holder.limits, maxWallMs: holder.limits.maxWallMs + by })
      return
    }
    const name = breach.budget
    const key = LIMIT_OF[name]
    const holder = this.find(name, name === 'tokens' ? 0 : 1)?.node
    if (holder) holder.limits = Object.freeze({ ...holder.limits, [key]: holder.limits[key] + by })
  }

  private find(name: Counted, amount: number): { node: Budget; breach: BudgetBreach } | undefined {
    const key = LIMIT_OF[name]
    for (let node = this.binding[name]; node; node = node.parent?.binding[name]) {
      const limit = node.limits[key]
      const spent = node.spent[name]
      if (name === 'tokens' ? spent >= limit : spent + amount > limit) return { node, breach: { budget: name, limit, spent } }
    }
    return undefined
  }
}

function limitOf(value: number | undefined): number {
  return typeof value === 'number' && value >= 0 ? value : Infinity
}

// The model gate's counted path: every model call of a run is counted per endpoint (a 429/503 there
// pauses every call to it: model-gate.ts).

/**
 * The model gate's count of calls in flight per endpoint, and the one path most model calls take
 * through it: with no cap configured and the shared backoff on, a call to an endpoint never
 * refused (or recovered) is only counted. Caps, an endpoint's backoff state and a refusal are
 * the gate's own (`ModelGate`, model-gate.ts: `gated`, `failed`).
 */
export abstract class CountedGate {
  /** Endpoints under backoff (refused, and not yet recovered). */
  protected readonly endpoints = new Map<string, Endpoint>()
  /** Calls in flight per endpoint with no state here. */
  protected readonly unlimited = new Map<string, number>()
  /** No cap is configured and the backoff is on: a call to an endpoint with no state is only counted. */
  protected countOnly = false

  /** One model call through the gate (see `ModelGate.gated`). */
  async generate(target: GateTarget, request: GenerateRequest): Promise<GenerateResponse> {
    const { signal } = request
    if (signal.aborted) throw signal.reason
    if (!this.countOnly) return this.gated(target, request)
    const key = this.keyOf(target)
    if (this.endpoints.has(key)) return this.gated(target, request, key)
    // The request is the turn's own, made for this call: marked in place (a spread copy takes V8's slow path).
    request.rateLimits = 'gate'
    this.unlimited.set(key, (this.unlimited.get(key) ?? 0) + 1)
    let response: GenerateResponse
    try {
      response = await target.model.generate(request)
    } catch (error) {
      return this.failed(target, request, key, error, performance.now())
    }
    // An endpoint made meanwhile (another call was refused) took this call over, at epoch 0.
    this.endpoints.get(key)?.succeeded(0)
    this.leave(key, undefined)
    return response
  }

  protected keyOf(target: GateTarget): string {
    return target.model.rateLimitKey?.(target.modelId) ?? (target.modelId ? `${target.name}:${target.modelId}` : target.name)
  }

  protected abstract gated(target: GateTarget, request: GenerateRequest, key?: string): Promise<GenerateResponse>

  protected abstract failed(
    target: GateTarget, request: GenerateRequest, key: string, error: unknown, failedAt: number,
  ): Promise<GenerateResponse>

  /**
   * A call to `key` ends its attempt: its slot of the endpoint it held goes back, or, when it went
   * through unlimited, of the endpoint made meanwhile, else its count. An endpoint with nothing
   * left to remember is dropped (the next call goes through unlimited again).
   */
  protected leave(key: string, held: Endpoint | undefined): void {
    const endpoint = held ?? this.endpoints.get(key)
    if (endpoint) {
      endpoint.free()
      if (endpoint.idle && this.endpoints.get(key) === endpoint) this.endpoints.delete(key)
      return
    }
    const left = this.unlimited.get(key)! - 1
    if (left) this.unlimited.set(key, left)
    else this.unlimited.delete(key)
  }
}
