import { describeError } from '@cordis-subagents/shared'
import type { Agent } from './agent.js'
import type { BudgetLimits, BudgetSpend } from './types.js'
import type { BudgetBreach } from '@cordis-subagents/shared'

/** What a `shouldContinue` hook sees before a model call. */
export interface ContinueState {
  agent: Agent
  /** The model call about to be made: 1 for the turn's first. */
  step: number
  /** Spend charged to this run's budget: its own, plus its descendants' for the limits it holds. */
  spent: Readonly<BudgetSpend>
  /** Spend of the whole tree (its root run's budget). */
  treeSpent: Readonly<BudgetSpend>
  /** What this run has left of each limit (`Infinity` where none applies). */
  remaining: Readonly<Required<BudgetLimits>>
}

/**
 * `true` / `undefined`: go on. `false`: stop the run. `{ stop: reason }`: stop it, saying why
 * (the reason is shown to whoever reads the result: keep secrets out).
 */
export type ContinueDecision = boolean | undefined | void | { stop: string }

export type ContinueHook = (state: ContinueState) => ContinueDecision

const MAX_REASON_LENGTH = 500

/** The operators' `shouldContinue` hooks of one runtime: asked in order, isolated, the first "stop" wins. */
export class ContinueHooks {
  private readonly hooks = new Set<ContinueHook>()

  constructor(private readonly warn: (format: string, ...args: unknown[]) => void) {}

  /** 0: runs ask no one (the loop checks this before building any state); a field, so that check is a read. */
  size = 0

  add(hook: ContinueHook): () => void {
    this.hooks.add(hook)
    this.size = this.hooks.size
    return () => {
      this.hooks.delete(hook)
      this.size = this.hooks.size
    }
  }

  /** The reason to stop, or undefined to go on. A hook that throws or answers oddly counts as "go on", with a warning. */
  ask(agent: Agent, step: number): string | undefined {
    const { budget } = agent
    const state: ContinueState = { agent, step, spent: budget.spent, treeSpent: budget.root.spent, remaining: budget.remaining() }
    for (const hook of [...this.hooks]) {
      let decision: ContinueDecision
      try {
        decision = hook(state)
      } catch (error) {
        this.warn('a shouldContinue hook failed (ignored: the run goes on): %s', describeError(error))
        continue
      }
      if (decision === undefined || decision === true) continue
      if (decision === false) return 'an operator\'s shouldContinue hook said stop'
      if (decision && typeof decision === 'object' && typeof (decision as { stop?: unknown }).stop === 'string') {
        const reason = (decision as { stop: string }).stop.trim().slice(0, MAX_REASON_LENGTH)
        return reason || 'an operator\'s shouldContinue hook said stop'
      }
      this.warn('a shouldContinue hook returned %s, not true / false / { stop } (ignored: the run goes on; hooks are synchronous)',
        decision !== null && typeof (decision as { then?: unknown }).then === 'function' ? 'a promise' : typeof decision)
    }
    return undefined
  }
}

/** What an `onBudget` handler sees when a run reaches a limit. */
export interface BudgetEvent {
  agent: Agent
  breach: BudgetBreach
  /** Raises the limit that was reached by `by` (steps, tokens, tool calls, ms). The run re-checks after every handler. */
  extend(by: number): void
  /**
   * Parks the run instead of stopping it, when the limit is still reached after every handler: it
   * returns `pending` with a `budget` question, and `agent.resume(answer)` re-checks the budget
   * (extend it first: `agent.budget.extend(breach, n)`). Parks before its next model call.
   */
  suspend(): void
}

/** The operators' `onBudget` handlers of one runtime: each told of a breach, isolated (one that throws is logged and ignored). */
export class BudgetHandlers {
  private readonly handlers = new Set<(event: BudgetEvent) => void>()
  /** 0: a breach asks no one; a field, so that check is a read. */
  size = 0

  constructor(private readonly warn: (format: string, ...args: unknown[]) => void) {}

  add(handler: (event: BudgetEvent) => void): () => void {
    this.handlers.add(handler)
    this.size = this.handlers.size
    return () => {
      this.handlers.delete(handler)
      this.size = this.handlers.size
    }
  }

  /** Tells every handler of `breach`; true when one of them asked to suspend the run. */
  reached(agent: Agent, breach: BudgetBreach): boolean {
    let suspend = false
    const event: BudgetEvent = { agent, breach, extend: (by) => agent.budget.extend(breach, by), suspend: () => { suspend = true } }
    for (const handler of [...this.handlers]) {
      try {
        handler(event)
      } catch (error) {
        this.warn('an onBudget handler failed (ignored): %s', describeError(error))
      }
    }
    return suspend
  }
}
