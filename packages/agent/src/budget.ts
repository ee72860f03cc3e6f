import {
  addCounts, type BudgetBreach, type BudgetName, describeBreach, handleRejection, LimitError, MAX_REPORTED_COUNT, MAX_TIMER_MS,
} from '@cordis-subagents/shared'
import type { BudgetLimits, BudgetSpend, ModelToolCall } from './types.js'

/** Budgets checked against spend; `wallMs` and `depth` are checked on their own. */
type Counted = Exclude<BudgetName, 'wallMs' | 'depth'>

const COUNTED: readonly Counted[] = ['steps', 'tokens', 'toolCalls', 'children']

const LIMIT_OF: Record<Counted, 'maxSteps' | 'maxTokens' | 'maxToolCalls' | 'maxChildren'> = {
  steps: 'maxSteps',
  tokens: 'maxTokens',
  toolCalls: 'maxToolCalls',
  children: 'maxChildren',
}

/** The binding record of a run with no counted limit on its chain. */
const UNBOUND = Object.freeze({ steps: undefined, tokens: undefined, toolCalls: undefined, children: undefined })

export const BUDGET_KEYS = [
  'maxSteps', 'maxTokens', 'maxToolCalls', 'maxWallMs', 'maxChildren', 'maxConcurrent', 'maxDepth',
] as const satisfies readonly (keyof BudgetLimits)[]

/**
 * One run's budget in a delegation tree. A child's limits are carved from what its parent has left when it starts (it
 * never gets more); spend is charged to every run above it that holds a limit of its own, and checks walk those runs, so
 * a sibling's spend counts against a shared ancestor. A carved limit never binds before the limit it was carved from (the
 * child's spend is part of the ancestor's), so only runs whose own limit is tighter than what they were carved from are
 * "binding" and visited: a check or a charge costs O(binding runs on the chain), not O(depth).
 */
export class Budget {
  readonly parent?: Budget
  readonly root: Budget
  /** The carved limits: min(own, what the parent had left at the start); raised only by `extend`. Infinity: none. */
  limits: Readonly<Required<BudgetLimits>>
  /** What was charged here: its own spend, plus its descendants' where it holds a limit of its own (a root: the whole tree's). */
  readonly spent: BudgetSpend = { steps: 0, tokens: 0, toolCalls: 0, children: 0 }
  /** `performance.now()` when the budget was made: its wall time runs on the monotonic clock (a step of the OS clock spends none). */
  readonly startedAt: number
  /** Per counted budget: the nearest run on the chain (this one included) holding a limit of its own. */
  private readonly binding: Readonly<Record<Counted, Budget | undefined>>
  /** The nearest run on the chain (this one included) whose own wall-time limit is tighter than what it was carved from. */
  private readonly wallHolder: Budget | undefined
  /** This run's own deadline (`performance.now()` based), where it holds one; raised only by `extend`. */
  private ownDeadline: number
  /** An in-process agent spends from it itself (`adopt`), checking first: reported totals are not charged again (a field: no call). */
  readonly spentInProcess: boolean = false
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
    // Carved from what the parent has left (a root: from no limit), read field by field: no `remaining()` object per child.
    const ownSteps = limitOf(own.maxSteps), ownTokens = limitOf(own.maxTokens)
    const ownToolCalls = limitOf(own.maxToolCalls), ownChildren = limitOf(own.maxChildren)
    const steps = parent?.left('steps') ?? Infinity, tokens = parent?.left('tokens') ?? Infinity
    const toolCalls = parent?.left('toolCalls') ?? Infinity, children = parent?.left('children') ?? Infinity
    this.limits = Object.freeze({
      maxSteps: Math.min(ownSteps, steps), maxTokens: Math.min(ownTokens, tokens), maxToolCalls: Math.min(ownToolCalls, toolCalls),
      maxWallMs: Math.min(limitOf(own.maxWallMs), parent ? Math.max(0, Math.round(parent.deadline - now)) : Infinity),
      maxChildren: Math.min(ownChildren, children),
      maxConcurrent: Math.min(limitOf(own.maxConcurrent), parent?.limits.maxConcurrent ?? Infinity),
      maxDepth: Math.min(limitOf(own.maxDepth), parent?.limits.maxDepth ?? Infinity),
    })
    const ownDeadline = now + limitOf(own.maxWallMs)
    const inherited = parent ? parent.deadline : Infinity
    const holdsWall = parent ? ownDeadline < inherited : ownDeadline !== Infinity
    this.ownDeadline = holdsWall ? ownDeadline : Infinity
    this.wallHolder = holdsWall ? this : parent?.wallHolder
    // A run holds a counted limit where its own is tighter than what it was carved from. Holding none, it binds as its
    // parent does (a root: as no run does) and shares that record, which never changes.
    const holds = ownSteps < steps || ownTokens < tokens || ownToolCalls < toolCalls || ownChildren < children
    this.binding = !holds ? parent?.binding ?? UNBOUND : {
      steps: ownSteps < steps ? this : parent?.binding.steps,
      tokens: ownTokens < tokens ? this : parent?.binding.tokens,
      toolCalls: ownToolCalls < toolCalls ? this : parent?.binding.toolCalls,
      children: ownChildren < children ? this : parent?.binding.children,
    }
  }

  /** A tree's root budget (a root agent's run). */
  static root(limits: BudgetLimits = {}, now = performance.now()): Budget {
    return new Budget(undefined, limits, now)
  }

  /** Carves a child's budget: each limit is min(the child's own, what this run has left). */
  child(own: BudgetLimits = {}, now = performance.now()): Budget {
    return new Budget(this, own, now)
  }

  /** Marks this budget as spent by an in-process agent directly (see `chargeTokensUpTo`). */
  adopt(): void {
    (this as { spentInProcess: boolean }).spentInProcess = true
  }

  /** What this run has left of each limit (`Infinity` where none applies), siblings' spend included. */
  remaining(now = performance.now()): Required<BudgetLimits> {
    return {
      maxSteps: this.left('steps'),
      maxTokens: this.left('tokens'),
      maxToolCalls: this.left('toolCalls'),
      maxWallMs: Math.max(0, Math.round(this.deadline - now)),
      maxChildren: this.left('children'),
      maxConcurrent: this.limits.maxConcurrent,
      maxDepth: this.limits.maxDepth,
    }
  }

  /** What this run has left of `name`: the least left of any run on the chain holding a limit for it (Infinity: none). */
  private left(name: Counted): number {
    let min = Infinity
    for (let node = this.binding[name]; node; node = node.parent?.binding[name]) {
      min = Math.min(min, node.limits[LIMIT_OF[name]] - node.spent[name])
    }
    return Math.max(0, min)
  }

  /**
   * The first limit on the chain that `amount` more of `name` would pass, or undefined.
   * For `tokens` (whose next cost is unknown) it asks whether any is left: spent < limit.
   */
  check(name: Counted, amount = 1): BudgetBreach | undefined {
    return this.find(name, amount)?.breach
  }

  /**
   * `performance.now()` after which this run's wall time is spent (`Infinity`: never): the nearest
   * deadline of the runs on the chain that hold one, so an extension of an ancestor's is seen here.
   */
  get deadline(): number {
    let deadline = Infinity
    for (let node = this.wallHolder; node; node = node.parent?.wallHolder) deadline = Math.min(deadline, node.ownDeadline)
    return deadline
  }

  /** Whether this run holds a wall-time limit of its own (then it arms the timer for it). */
  get holdsWallTime(): boolean { return this.wallHolder === this }

  /** Wall time: a breach once a deadline on the chain has passed, naming the run that holds it. */
  overtime(now = performance.now()): BudgetBreach | undefined {
    const node = this.wallBreach(now)
    return node && { budget: 'wallMs', limit: node.limits.maxWallMs, spent: Math.round(now - node.startedAt - node.pausedMs) }
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
    // A spend listener (a run's `onSpend`) must never break the charge: it runs inside a turn, an admission or a run's end.
    try { handleRejection(this.root.watcher?.(this.root.spent)) } catch { /* its own failure */ }
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
    if (this.spentInProcess || !Number.isFinite(total)) return
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
      const holder = this.wallBreach(performance.now())
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

/** Whose handlers hear of a breach: a `TurnOwner` (turn-owner.ts) without its types (a method's parameter fits both ways). */
interface BreachOwner { readonly agent: object; readonly host: { budgetReached(agent: never, breach: BudgetBreach): boolean } }

const stepBreach = (budget: Budget) => budget.overtime() ?? budget.check('steps') ?? budget.check('tokens')
const toolCallBreach = (budget: Budget) => budget.check('toolCalls'), overtimeBreach = (budget: Budget) => budget.overtime()
const fireWall = (limits: TurnLimits) => limits.wallFired()
const limitOf = (value: number | undefined): number => typeof value === 'number' && value >= 0 ? value : Infinity

/** One turn's limits: the checks that let the operator's handlers extend a budget, the tool calls a step gets, the wall-time timer. */
export class TurnLimits {
  /** A breach a handler asked to suspend at (`BudgetEvent.suspend()`); the loop parks at its next step boundary. */
  private suspendFor?: BudgetBreach
  private timer?: NodeJS.Timeout; private wallAbort?: { abort(reason: unknown): void }

  /** `owner`: whose runtime's budget handlers hear of a breach (`host.budgetReached`); no closure per turn. */
  constructor(private readonly budget: Budget, private readonly owner: BreachOwner) {}

  /** The breach to park at, if a handler asked to suspend; cleared. */
  takeSuspension(): BudgetBreach | undefined {
    const breach = this.suspendFor
    this.suspendFor = undefined
    return breach
  }

  /**
   * Which calls of a step run: no more than the tool-call budget allows (the response was already
   * cut to `maxToolCallsPerStep`). The others get `refusals`, an error the model reads (by call index).
   */
  admit(calls: readonly ModelToolCall[]): { admitted: number; refusals: Map<number, string>; refusedFor?: BudgetBreach } {
    const { budget } = this
    const refusals = new Map<number, string>()
    let admitted = 0
    let spent: string | undefined
    let refusedFor: BudgetBreach | undefined
    for (let i = 0; i < calls.length; i++) {
      // Once the budget is spent in this step it stays spent: the handlers are asked once.
      const breach = spent === undefined ? this.reached(toolCallBreach) : undefined
      if (breach) {
        refusedFor = breach
        spent = `Not run: ${describeBreach(breach)} is spent. Answer with what you have.`
      }
      if (spent !== undefined) {
        refusals.set(i, spent)
        continue
      }
      budget.charge('toolCalls', 1)
      admitted++
    }
    return refusedFor ? { admitted, refusals, refusedFor } : { admitted, refusals }
  }

  /** The limits checked before each step (wall time, steps, tokens), as `reached` finds them. */
  beforeStep(): BudgetBreach | undefined { return this.reached(stepBreach) }

  /** A breach, after the operator's handlers had their chance to extend the budget; undefined when none is left. */
  reached(find: (budget: Budget) => BudgetBreach | undefined): BudgetBreach | undefined {
    const { budget, owner } = this
    const breach = find(budget)
    if (!breach) return undefined
    const suspend = owner.host.budgetReached(owner.agent as never, breach)
    const after = find(budget)
    if (after && suspend) this.suspendFor ??= after
    return after
  }

  /** One timer per leg (its argument is these limits: no closure), only where this run's wall-time limit is tighter than its parent's. */
  armWallClock(abort: { abort(reason: unknown): void }): void { if (this.budget.holdsWallTime) { this.wallAbort = abort; this.armWall() } }

  /** The leg closed: its timer goes. */
  disarmWallClock(): void { if (this.timer) clearTimeout(this.timer); this.timer = undefined }

  /** @internal The timer fired (`fireWall`): a passed deadline aborts the leg; a far one (Node fires a longer delay at once) re-arms. */
  wallFired(): void {
    const breach = this.reached(overtimeBreach)
    if (!breach) return this.armWall()
    // A handler asked to suspend: the step in flight finishes, and the turn parks before the next.
    if (this.suspendFor) return
    this.wallAbort!.abort(new LimitError('BUDGET_EXCEEDED', `Stopped by ${describeBreach(breach)}.`, breach))
  }

  private armWall(): void {
    this.timer = setTimeout(fireWall, Math.max(0, Math.min(this.budget.deadline - performance.now(), MAX_TIMER_MS)), this)
  }
}
