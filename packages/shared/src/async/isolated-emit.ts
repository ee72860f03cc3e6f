import type { Context } from 'cordis'

/**
 * Calls every listener of event `name` on its own: a listener that throws or rejects is reported
 * to `onError` and neither stops the other listeners nor reaches the emitter. Use it for events
 * whose consumers must not veto the emitter (a provider registration, a run's end).
 *
 * cordis' own `emit` stops at the first throwing listener, and its `dispatch` generator ends there
 * too, so the listeners are read here: `lifecycle.filterHooks` (public) keeps cordis' listener
 * filtering; the list itself is only reachable as `lifecycle._hooks`, and this is the one place
 * in the project that reads it.
 */
export function emitIsolated(ctx: Context, name: string, args: unknown[], onError: (error: unknown) => void): void {
  emitIsolatedOn(ctx.lifecycle, name, args, onError)
}

/**
 * `emitIsolated` on a lifecycle the caller keeps: reading `ctx.lifecycle` goes through cordis'
 * caller tracing (a shadow context per read), which a hot emitter should pay once, not per event.
 */
export function emitIsolatedOn(lifecycle: Context['lifecycle'], name: string, args: unknown[], onError: (error: unknown) => void): void {
  const hooks = lifecycle._hooks[name]
  if (!hooks?.length) return
  for (const hook of lifecycle.filterHooks(hooks)) {
    // A listener removed by an earlier listener is not called.
    if (!hooks.includes(hook)) continue
    try {
      handleRejection(hook.callback(...args), onError)
    } catch (error) {
      onError(error)
    }
  }
}

/**
 * What a callback we call on its own returned: when it is a promise (an `async` listener), its rejection goes to `onError`
 * (dropped without one) instead of becoming an unhandled rejection, which stops a Node process. Pair it with a `try` for
 * what the callback throws; a callback's result is never awaited.
 */
export function handleRejection(returned: unknown, onError?: (error: unknown) => void): void {
  if (returned && typeof (returned as PromiseLike<unknown>).then === 'function') Promise.resolve(returned).catch(onError ?? ignore)
}

function ignore(): void {}

/** Whether event `name` has a listener on `lifecycle` now, so a hot emitter can skip building its arguments. */
export function hasListenersOn(lifecycle: Context['lifecycle'], name: string): boolean {
  return !!lifecycle._hooks[name]?.length
}
