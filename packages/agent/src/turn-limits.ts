import { MAX_TIMER_MS } from '@cordis-subagents/shared'
import { type BudgetBreach, describeBreach, LimitError } from '@cordis-subagents/shared'
import type { TurnAbort } from './turn-leg.js'
import type { Budget } from './budget.js'
import type { ModelToolCall } from './types.js'

/** Which calls of a step run; the others get these readable refusals (by call index). */
export interface StepPlan {
  admitted: number
  refusals: Map<number, string>
  /** Set when calls were refused because the tool-call budget is spent: the limit, its value and the spend. */
  refusedFor?: BudgetBreach
}

/**
 * The limits of one turn: the budget checks that give the operator's handlers a chance to extend
 * (`onBreach`), the fan-out cap of a step, and the wall-time timer.
 */
export class TurnLimits {
  constructor(
    private readonly budget: Budget,
    private readonly maxToolCallsPerStep: number,
    private readonly onBreach: (breach: BudgetBreach) => boolean,
  ) {}

  /** A breach a handler asked to suspend at (`BudgetEvent.suspend()`); the loop parks at its next step boundary. */
  private suspendFor?: BudgetBreach

  /** The breach to park at, if a handler asked to suspend; cleared. */
  takeSuspension(): BudgetBreach | undefined {
    const breach = this.suspendFor
    this.suspendFor = undefined
    return breach
  }

  /**
   * Decides which calls of a step run: no more than the tool-call budget allows (the response was
   * already cut to `maxToolCallsPerStep`, see `droppedCallsNote`). The others are answered with an
   * error the model can read; the step is not dropped.
   */
  admit(calls: readonly ModelToolCall[]): StepPlan {
    const { budget } = this
    const refusals = new Map<number, string>()
    let admitted = 0
    let spent: string | undefined
    let refusedFor: BudgetBreach | undefined
    for (let i = 0; i < calls.length; i++) {
      // Once the budget is spent in this step it stays spent: the handlers are asked once.
      const breach = spent === undefined ? this.reached(() => budget.check('toolCalls')) : undefined
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

  /**
   * The one message that answers every call past `maxToolCallsPerStep`: those calls were dropped
   * from the step (not kept in the transcript, not run), so they cost O(1) however many there were.
   */
  droppedCallsNote(kept: number, dropped: number): string {
    const cap = this.maxToolCallsPerStep
    return `Not run: your last step asked for ${kept + dropped} tool calls and at most ${cap} run per step `
      + `(maxToolCallsPerStep). The first ${kept} were kept (their results are above); the other ${dropped} were dropped `
      + `without running and are not in the conversation. Ask again for the ones you still need, at most ${cap} per step.`
  }

  /** A breach, after the operator's handlers had their chance to extend the budget; undefined when none is left. */
  reached(find: () => BudgetBreach | undefined): BudgetBreach | undefined {
    const breach = find()
    if (!breach) return undefined
    const suspend = this.onBreach(breach)
    const after = find()
    if (after && suspend) this.suspendFor ??= after
    return after
  }

  /** One timer per run, only where this run's wall-time limit is tighter than its parent's (which has its own). */
  armWallClock(abort: TurnAbort): () => void {
    const { budget } = this
    // A run without a wall-time limit of its own is stopped by the timer of the run that holds it.
    if (!budget.holdsWallTime) return () => {}
    let timer: NodeJS.Timeout
    const arm = () => {
      // Node fires a longer delay at once; a far deadline is re-armed when this one fires.
      timer = setTimeout(fire, Math.max(0, Math.min(budget.deadline - Date.now(), MAX_TIMER_MS)))
    }
    const fire = () => {
      const breach = this.reached(() => budget.overtime())
      if (!breach) return arm()
      // A handler asked to suspend: the step in flight finishes, and the turn parks before the next.
      if (this.suspendFor) return
      abort.abort(new LimitError('BUDGET_EXCEEDED', `Stopped by ${describeBreach(breach)}.`, breach))
    }
    arm()
    return () => clearTimeout(timer)
  }
}
