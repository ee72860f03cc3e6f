import { type AbortScope, isAbortScope } from './abort-scope.js'

/**
 * Many callers waiting on one signal (every call of a wide step waits on its turn's signal) share
 * one real `abort` listener per signal. Adding and removing a caller is O(1) in a Set, where N
 * listeners on the signal itself make every removal walk the signal's listener list (O(N²) for a
 * step of N calls) and trip Node's max-listeners warning.
 */
interface Waiters {
  callbacks: Set<() => void>
  listener: () => void
}

const waiting = new WeakMap<AbortSignal, Waiters>()

/**
 * Calls `callback` once when `signal` aborts (at once if it already has); the returned function
 * stops waiting (idempotent). The signal's one listener goes when its last waiter does. A callback
 * that throws does not stop the others; its error is rethrown on the next tick, as an `abort`
 * listener's would be. An `AbortScope` (our own) is waited on through its `onAbort`: no signal is made.
 */
export function onAbort(source: AbortSignal | AbortScope, callback: () => void): () => void {
  if (isAbortScope(source)) return source.onAbort(callback)
  const signal = source as AbortSignal
  if (signal.aborted) {
    callback()
    return noop
  }
  let waiters = waiting.get(signal)
  if (!waiters) {
    const callbacks = new Set<() => void>()
    const listener = () => {
      waiting.delete(signal)
      for (const waiter of callbacks) {
        try {
          waiter()
        } catch (error) {
          process.nextTick(() => { throw error })
        }
      }
      callbacks.clear()
    }
    waiters = { callbacks, listener }
    waiting.set(signal, waiters)
    signal.addEventListener('abort', listener, { once: true })
  }
  // A wrapper per registration, so the same callback registered twice is two registrations.
  const entry = () => callback()
  const { callbacks, listener } = waiters
  callbacks.add(entry)
  return () => {
    if (!callbacks.delete(entry) || callbacks.size || signal.aborted) return
    signal.removeEventListener('abort', listener)
    waiting.delete(signal)
  }
}

/** How many callers wait on `signal` through `onAbort` (for tests and leak checks). */
export function abortWaiters(signal: AbortSignal): number {
  return waiting.get(signal)?.callbacks.size ?? 0
}

const noop = () => {}
