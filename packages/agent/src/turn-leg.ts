import type { TurnAbort } from './turn-abort.js'
import type { Budget } from './budget.js'
import type { TurnLimits } from './turn-limits.js'
import type { TurnOwner, TurnWatch } from './turn-owner.js'
import type { AgentEvent, RunOptions } from './types.js'

/**
 * One call of `run`, `wake` or `resume` on a turn: its abort, its listener, its observers and its
 * wall-clock timer. A turn that parks closes its leg (no timer, no listener held while parked);
 * `resume` opens the next one.
 */
export interface Leg {
  abort: TurnAbort
  /** Undefined without an `onEvent`: `emit?.({ … })` then builds no event object at all. */
  emit?: (event: AgentEvent) => void
  /** The run's observers, when anyone observes. */
  watch?: TurnWatch
  /** Nothing is reported after this, the timer is disarmed and `onSpend` unwatched. */
  close(): void
}

export function openLeg(
  turn: { budget: Budget; limits: TurnLimits }, owner: TurnOwner, abort: TurnAbort, options: RunOptions,
  prompt: string, resumedQuestion?: string,
): Leg {
  let ended = false
  const { onEvent, onSpend } = options
  const emit = onEvent && ((event: AgentEvent) => {
    // Nothing is reported after the leg ended (e.g. a late onUpdate from a tool that ignored the abort).
    if (ended) return
    try {
      onEvent(event)
    } catch {
      // A progress listener must never break the loop.
    }
  })
  const unwatch = onSpend && owner.ownsRootBudget ? turn.budget.watch(onSpend) : undefined
  // undefined when nobody observes: every `watch?.` is then one check, no call.
  const watch = owner.host.watch(prompt, resumedQuestion)
  const disarm = turn.limits.armWallClock(abort)
  return {
    abort,
    emit,
    watch,
    close() {
      ended = true
      disarm()
      unwatch?.()
    },
  }
}
