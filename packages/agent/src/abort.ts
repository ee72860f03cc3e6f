/**
 * Aborting a delegation tree cascades: a parent's abort aborts its tool calls, which cancel their
 * children, whose turns abort their own tool calls, and so on. Done with plain nested
 * `controller.abort()` calls, every level adds stack frames and a deep tree overflows the stack.
 * `abortFlat` (`runFlat`) runs the first abort at once and queues any abort that happens during it, draining
 * the queue in a loop: the cascade still completes before the outermost call returns, with a
 * stack that does not grow with the depth of the tree.
 */
const queue: Array<() => void> = []
let draining = false

/** Runs `step` now, or, when called during another's cascade, queued behind it in the same loop. */
export function runFlat(step: () => void): void {
  if (draining) {
    queue.push(step)
    return
  }
  draining = true
  try {
    step()
    // The queue grows while it drains (each step may queue more); index, do not shift.
    for (let i = 0; i < queue.length; i++) {
      const next = queue[i]
      queue[i] = undefined!
      next()
    }
  } finally {
    queue.length = 0
    draining = false
  }
}

export function abortFlat(controller: AbortController, reason?: unknown): void {
  if (!controller.signal.aborted) runFlat(() => controller.abort(reason))
}

/**
 * Model calls and tool work a turn stopped waiting for (its abort won the race), which the agent's
 * `dispose` still waits for (`settled`). Made on the first abort that leaves work behind: a turn
 * that is never aborted tracks nothing, and a waiting call holds no extra promise or closure.
 */
export class InFlight {
  private count = 0
  private wake?: () => void

  add(work: PromiseLike<unknown>): void {
    this.count++
    const untrack = () => {
      if (--this.count || !this.wake) return
      const wake = this.wake
      this.wake = undefined
      wake()
    }
    work.then(untrack, untrack)
  }

  settled(): Promise<void> | undefined {
    return this.count ? new Promise<void>((resolve) => this.wake = resolve) : undefined
  }
}
