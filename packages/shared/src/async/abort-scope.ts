/**
 * An abort that is not an `AbortSignal` until someone asks for one. On Node 20 an `AbortSignal` costs ≈ 3 µs to make,
 * and every one made outlives the next young-generation collection (it is promoted to the old generation and costs a
 * full collection later), as does whatever listens on it at that moment (bench/README). Our own code waits on a scope
 * with `onAbort`; code that takes an `AbortSignal` (a model's `fetch`, a third-party provider) reads `signal`, made on
 * first read and aborted with the scope.
 */
export interface AbortScope {
  readonly aborted: boolean
  /** Why it aborted (an `AbortError` `DOMException` when aborted without a reason, as a signal's would be). */
  readonly reason: unknown
  /** Calls `callback` once when the scope aborts (at once if it has); the returned function stops waiting (idempotent). */
  onAbort(callback: () => void): () => void
  /** An `AbortSignal` that aborts with the scope, made on first read. */
  readonly signal: AbortSignal
}

/**
 * The waiters of an abort that needs no `AbortSignal` to be waited on: `onAbort` callbacks, called in the order they came by
 * the owner's abort (`callWaiters`). The base of `LazyAbort` and of the agent's turn abort.
 */
export abstract class AbortWaiters {
  abstract readonly aborted: boolean
  /** One waiter in a field (the common case), more in a set. */
  private first?: () => void
  private more?: Set<() => void>

  /** Calls `callback` once when this aborts (at once if it has); the returned function stops waiting (idempotent). */
  onAbort(callback: () => void): () => void {
    if (this.aborted) {
      callback()
      return noop
    }
    // A wrapper per registration, so the same callback registered twice is two registrations.
    const waiter = () => callback()
    if (!this.first && !this.more?.size) this.first = waiter
    else (this.more ??= new Set()).add(waiter)
    return () => {
      if (this.first === waiter) this.first = undefined
      else this.more?.delete(waiter)
    }
  }

  /** Calls every waiter once; a waiter an earlier one stopped meanwhile is not called, as a signal's removed listener is not. */
  protected callWaiters(): void {
    const { first, more } = this
    this.first = undefined
    if (first) call(first)
    if (more) for (const waiter of more) call(waiter)
    this.more = undefined
  }
}

/** An `AbortScope` its owner aborts (`abort`). Waiters are called in the order they came, after the signal's listeners. */
export class LazyAbort extends AbortWaiters implements AbortScope {
  aborted = false
  reason: unknown
  private controller?: AbortController

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController()
      if (this.aborted) this.controller.abort(this.reason)
    }
    return this.controller.signal
  }

  abort(reason?: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason
    this.controller?.abort(this.reason)
    this.callWaiters()
  }
}

/**
 * Calls `callback` once when `source` aborts (at once if it has); the returned function stops waiting. On an
 * `AbortSignal` the listener is a small relay that lets go of `callback` when stopped: Node 20 keeps a listener taken off
 * an `AbortSignal` alive through the next young-generation collection, and with it everything the callback holds.
 */
export function listenForAbort(source: AbortSignal | AbortScope, callback: () => void): () => void {
  if (isAbortScope(source)) return source.onAbort(callback)
  if (source.aborted) {
    callback()
    return noop
  }
  const relay = new AbortRelay(callback)
  source.addEventListener('abort', relay, ONCE)
  return () => {
    if (!relay.callback) return
    relay.callback = undefined
    source.removeEventListener('abort', relay)
  }
}

class AbortRelay {
  constructor(public callback: (() => void) | undefined) {}
  handleEvent(): void {
    const { callback } = this
    this.callback = undefined
    callback?.()
  }
}

/** Whether `value` is an `AbortScope` (our own, not a signal): what an options check accepts where a signal also goes. */
export function isAbortScope(value: unknown): value is AbortScope {
  return typeof value === 'object' && value !== null && !(value instanceof AbortSignal)
    && typeof (value as AbortScope).onAbort === 'function' && typeof (value as AbortScope).aborted === 'boolean'
}

const ONCE = { once: true } as const
const noop = () => {}

function call(waiter: () => void): void {
  try {
    waiter()
  } catch (error) {
    process.nextTick(() => { throw error })
  }
}

/**
 * Gives `carrier` (a request that carries `abortScope`) a `signal`: an own enumerable accessor that reads the scope's
 * signal, so it is made only if someone reads it (a spread copy or `Object.keys` sees it as a plain field).
 */
export function withScopeSignal<T extends { abortScope: AbortScope }>(carrier: T): T & { readonly signal: AbortSignal } {
  return Object.defineProperty(carrier, 'signal', SCOPE_SIGNAL) as T & { readonly signal: AbortSignal }
}

function scopeSignal(this: { abortScope: AbortScope }): AbortSignal { return this.abortScope.signal }
const SCOPE_SIGNAL: PropertyDescriptor = { enumerable: true, configurable: true, get: scopeSignal }
