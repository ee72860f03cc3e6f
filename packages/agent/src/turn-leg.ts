import { setMaxListeners } from 'node:events'
import { abortFlat } from './abort.js'
import { AgentError } from './errors.js'
import type { Budget } from './budget.js'
import type { HookRun } from './hook-run.js'
import type { TurnOwner, TurnWatch } from './turn-owner.js'
import type { AgentEvent, RunOptions } from './types.js'

/**
 * A turn's abort: the signal its model and tool calls get, and the one promise the turn races them
 * against. Only the agent aborts a turn (its caller's signal, `abort()`, `dispose()`, the wall-clock
 * limit), always through `abort`, so the promise is rejected there: no listener on the turn's own
 * signal, and no promise at all for a turn that never waits on one.
 */
export class TurnAbort {
  private readonly controller = new AbortController()
  private promise?: Promise<never>
  private reject?: (reason: unknown) => void
  private listenersRaised = false

  get signal(): AbortSignal {
    return this.controller.signal
  }

  /** Rejects once the turn is aborted (at once if it already is); only ever observed through a race. */
  get aborted(): Promise<never> {
    if (!this.promise) {
      this.promise = new Promise<never>((_, reject) => {
        if (this.controller.signal.aborted) reject(this.controller.signal.reason)
        else this.reject = reject
      })
      this.promise.catch(() => {})
    }
    return this.promise
  }

  abort(reason?: unknown): void {
    abortFlat(this.controller, reason)
    // abortFlat may queue this abort behind one in progress; it is done before the outermost call
    // returns, so by the time the rejection is observed (a microtask later) the signal is aborted.
    this.reject?.(reason)
    this.reject = undefined
  }

  /**
   * Tools listen on the turn's signal (a delegating tool may start many children on it at once), so
   * before the first tool step the listener limit is lifted; a turn without tools never pays for it.
   */
  raiseListenerLimit(): void {
    if (this.listenersRaised) return
    this.listenersRaised = true
    setMaxListeners(0, this.controller.signal)
  }
}

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
  /** The agent's hooks and metric sink, when it has either. */
  hooks?: HookRun
  /** Nothing is reported after this, the timer is disarmed and `onSpend` unwatched. */
  close(): void
}

export function openLeg(
  turn: { budget: Budget; limits: { armWallClock(abort: TurnAbort): () => void } }, owner: TurnOwner, abort: TurnAbort, options: RunOptions,
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
  const watch = owner.host.watch(owner.agent, prompt, resumedQuestion)
  const hooks = owner.host.hookRun(owner.agent, turn, abort)
  const disarm = turn.limits.armWallClock(abort)
  return {
    abort,
    emit,
    watch,
    hooks,
    close() {
      ended = true
      disarm()
      unwatch?.()
    },
  }
}

/** Misuse of `Agent.run` fails at the call, with what to pass instead. */
export function checkRunArguments(prompt: unknown, options: RunOptions): void {
  if (typeof prompt !== 'string') throw new AgentError('INVALID_PROMPT', 'The prompt must be a string.')
  if (options === null || typeof options !== 'object') throw new AgentError('INVALID_OPTIONS', 'run() takes an options object { signal?, onEvent?, onSpend? }.')
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new AgentError('INVALID_OPTIONS', 'options.signal must be an AbortSignal (e.g. new AbortController().signal).')
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') {
    throw new AgentError('INVALID_OPTIONS', 'options.onEvent must be a function.')
  }
  if (options.onSpend !== undefined && typeof options.onSpend !== 'function') {
    throw new AgentError('INVALID_OPTIONS', 'options.onSpend must be a function.')
  }
}
