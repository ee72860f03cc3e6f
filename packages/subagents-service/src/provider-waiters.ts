import { isCount, MAX_TIMER_MS } from '@cordis-subagents/shared'
import { SubagentError } from './errors.js'
import type { SubagentProvider } from './types.js'

/** How long `ready` waits for a provider by default. */
const DEFAULT_READY_TIMEOUT = 30_000

interface ProviderWaiter {
  done(provider: SubagentProvider): void
  fail(error: SubagentError): void
}

/** Callers of `ctx.subagents.ready` waiting for a provider, by name. */
export class ProviderWaiters {
  private readonly awaiting = new Map<string, Set<ProviderWaiter>>()

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

  /** Provider `provider` was registered: its waiters resume. */
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
