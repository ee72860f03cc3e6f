import type { StreamResponse, Task } from '@a2a-js/sdk'
import type { SubagentUpdate } from '@cordis-subagents/subagents-service'
import { LimitError } from './bounded-fetch.js'
import { stateName } from './task-state.js'
import type { TaskView } from './task-view.js'
import { TaskGoneError, type A2aWire, type WireOptions } from './wire.js'

/** What following one phase of a task needs from its run. */
export interface Follower {
  readonly view: TaskView
  readonly wire: A2aWire
  readonly limits: { requestTimeout: number; idleTimeout: number; pollInterval: number; stuckTimeout: number }
  /** The current phase's request options (its transport signal). */
  options(): WireOptions
  /** Stops every request of the phase (a limit passes its `LimitError`). */
  abort(reason?: unknown): void
  /** The phase is over: a final state, an interrupted one asking us, a direct message, an expired cancel. */
  done(): boolean
  forward(updates: SubagentUpdate[]): void
  /** Waits `ms`, or less when woken (cancel, dispose). */
  sleep(ms: number): Promise<void>
  describe(error: unknown): string
  /** Records why the phase ended without a state that ends it (the first reason wins). */
  fail(why: string): void
}

/** The stream's first event, or a `LimitError` after `requestTimeout` (bytes that are no event do not count). */
export async function boundedFirstEvent(run: Follower, stream: AsyncIterator<StreamResponse>): Promise<IteratorResult<StreamResponse>> {
  const limit = run.limits.requestTimeout
  const timer = setTimeout(() => run.abort(new LimitError(`no first event within ${limit} ms (requestTimeout)`)), limit)
  try {
    return await stream.next()
  } finally {
    clearTimeout(timer)
  }
}

/** Follows the stream; `idleTimeout` counts from the last event (keep-alive comments do not keep a run alive). */
export async function followStream(run: Follower, stream: AsyncIterator<StreamResponse>): Promise<void> {
  const idle = run.limits.idleTimeout
  let timer: NodeJS.Timeout | undefined
  const arm = () => {
    clearTimeout(timer)
    timer = setTimeout(() => run.abort(
      new LimitError(`the stream was silent for ${idle} ms (idleTimeout): no event came (keep-alive comments do not count)`),
    ), idle)
  }
  try {
    arm()
    while (!run.done()) {
      const next = await stream.next()
      arm()
      if (next.done) {
        if (!run.done()) run.fail(`the stream ended while the task was ${stateName(run.view.state)}`)
        return
      }
      run.forward(run.view.apply(next.value))
    }
  } finally {
    clearTimeout(timer)
    await stream.return?.(undefined).catch(() => {})
  }
}

/**
 * Polls the task until the phase is over. A task the remote no longer knows ends the run at once;
 * one that answers without any change for `stuckTimeout` (an executor that threw leaves its task
 * `working` forever) ends it too: both are errors naming the task and what was seen. `idleTimeout` and
 * `stuckTimeout` are measured on the monotonic clock: a wall-clock step neither ends a healthy task nor keeps a stuck one.
 */
export async function pollTask(run: Follower, isAborted: () => boolean): Promise<void> {
  const { pollInterval, idleTimeout, stuckTimeout } = run.limits
  let lastAnswer = performance.now()
  let lastProgress = lastAnswer
  let mark = run.view.progressMark()
  while (!run.done()) {
    await run.sleep(pollInterval)
    if (run.done() || isAborted()) return
    let task: Task
    try {
      task = await run.wire.getTask(run.view.taskId!, run.options())
    } catch (error) {
      if (error instanceof TaskGoneError) {
        const why = `the remote no longer knows the task (task not found: ${run.describe(error)}); it was lost or its executor failed`
        throw new TaskGoneError(why, { cause: error })
      }
      if (isAborted()) throw error
      if (performance.now() - lastAnswer > idleTimeout) {
        throw new Error(`no poll was answered for ${idleTimeout} ms (idleTimeout); the last error: ${run.describe(error)}`)
      }
      continue
    }
    lastAnswer = performance.now()
    run.forward(run.view.applyTask(task))
    const now = run.view.progressMark()
    if (now !== mark) {
      mark = now
      lastProgress = lastAnswer
    } else if (!run.done() && lastAnswer - lastProgress > stuckTimeout) {
      throw new Error(`the task showed no progress for ${stuckTimeout} ms (stuckTimeout): `
        + `still ${stateName(run.view.state)}, no new status, message or artifact; its executor has likely failed`)
    }
  }
}

/** Waits `ms`, or less when the function handed to `setWake` is called (a cancel, a dispose). */
export function wakeableSleep(ms: number, setWake: (wake: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    setWake(done)
    function done() {
      clearTimeout(timer)
      resolve()
    }
  })
}
