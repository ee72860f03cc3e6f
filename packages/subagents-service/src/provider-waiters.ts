import { isCount, MAX_TIMER_MS } from '@cordis-subagents/shared'
import { SubagentError } from './errors.js'
import type { SubagentProvider } from './types.js'

/** How long `ready` waits for a provider by default. */
const DEFAULT_READY_TIMEOUT = 30_000

/** Follows one provider by name (`ctx.subagents.follow`): told when it is registered and when it goes. */
export interface ProviderFollower {
  added(provider: SubagentProvider): void
  removed(): void
}

interface ProviderWaiter {
  done(provider: SubagentProvider): void
  fail(error: SubagentError): void
}

/** Who waits on a provider by name: callers of `ctx.subagents.ready`, and followers (`ctx.subagents.follow`). */
export class ProviderWaiters {
  private readonly awaiting = new Map<string, Set<ProviderWaiter>>()
  private readonly followers = new Map<string, Set<ProviderFollower>>()

  /** `onError`: a follower threw (the others and the registration go on). */
  constructor(private readonly onError: (name: string, error: unknown) => void) {}

  /** Adds a follower of provider `name`; the returned function removes it. */
  follow(name: string, follower: ProviderFollower): () => void {
    let followers = this.followers.get(name)
    if (!followers) this.followers.set(name, followers = new Set())
    followers.add(follower)
    return () => {
      followers.delete(follower)
      if (!followers.size && this.followers.get(name) === followers) this.followers.delete(name)
    }
  }

  /** Provider `name` went: its followers are told. */
  removed(name: string): void {
    for (const follower of this.followers.get(name) ?? []) this.tell(name, () => follower.removed())
  }

  /** Calls one follower; what it throws is reported, not passed on. */
  tell(name: string, call: () => void): void {
    try {
      call()
    } catch (error) {
      this.onError(name, error)
    }
  }

  /** Waits for provider `name` (see `SubagentService.ready`); the service has checked it is not there yet. */
  wait(name: string, options: { timeout?: number; signal?: AbortSignal }, stopped: boolean): Promise<SubagentProvider> {
    const timeout = options.timeout ?? DEFAULT_READY_TIMEOUT
    if (typeof name !== 'string' || !isCount(timeout) || timeout > MAX_TIMER_MS) {
      return Promise.reject(new SubagentError('INVALID_REQUEST',
        `ready(name, { timeout }) takes a provider name and a timeout of 0-${MAX_TIMER_MS} ms (got ${JSON.stringify(name)}, ${String(timeout)}).`))
    }
    if (stopped) return Promise.reject(new SubagentError('ABORTED', 'The subagents service has stopped.'))
    if (options.signal?.aborted) return Promise.reject(new SubagentError('ABORTED', `Stopped waiting for provider "${name}".`))
    return new Promise<SubagentProvider>((resolve, reject) => {
      let waiters = this.awaiting.get(name)
      if (!waiters) this.awaiting.set(name, waiters = new Set())
      const settle = () => {
        clearTimeout(timer)
        options.signal?.removeEventListener('abort', onAbort)
        waiters!.delete(waiter)
        if (!waiters!.size && this.awaiting.get(name) === waiters) this.awaiting.delete(name)
      }
      const waiter: ProviderWaiter = {
        done: (provider) => { settle(); resolve(provider) },
        fail: (error) => { settle(); reject(error) },
      }
      const onAbort = () => waiter.fail(new SubagentError('ABORTED', `Stopped waiting for provider "${name}".`))
      const timer = timeout ? setTimeout(() => waiter.fail(new SubagentError('NO_PROVIDER',
        `Subagent provider "${name}" was not registered within ${timeout} ms. Check that its plugin is loaded and its config is valid (a plugin that failed to load says why in the log).`)),
      timeout) : undefined
      options.signal?.addEventListener('abort', onAbort, { once: true })
      waiters.add(waiter)
    })
  }

  /** Provider `provider` was registered: its followers are told. */
  added(provider: SubagentProvider): void {
    for (const follower of this.followers.get(provider.name) ?? []) this.tell(provider.name, () => follower.added(provider))
  }

  /** Provider `provider` was registered (its followers told, its event emitted): its waiters resume. */
  registered(provider: SubagentProvider): void {
    const waiters = this.awaiting.get(provider.name)
    if (!waiters) return
    this.awaiting.delete(provider.name)
    for (const waiter of waiters) waiter.done(provider)
  }

  /** The service stopped: every waiter rejects `ABORTED`. */
  failAll(): void {
    for (const waiters of this.awaiting.values()) {
      for (const waiter of waiters) waiter.fail(new SubagentError('ABORTED', 'The subagents service stopped while waiting for a provider.'))
    }
    this.awaiting.clear()
  }
}
