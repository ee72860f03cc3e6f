import { setMaxListeners } from 'node:events'
import { abortFlat } from './abort.js'

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
