import { headChars } from '@cordis-subagents/shared'
import { A2aError } from './errors.js'
import { Endpoint, type EndpointHealth, type EndpointSettings } from './endpoint.js'

/**
 * The endpoints of one provider load, in config order. Cards are read again lazily: each start
 * reads, in the background, the cards that are due, so an idle provider makes no requests and
 * holds no timers.
 */
export class EndpointPool {
  readonly endpoints: Endpoint[]
  /** Where the round-robin among equally loaded endpoints continues. */
  private cursor = 0
  /** Aborts the card reads in flight (the provider is disposed, or its load was stopped). */
  private readonly reads = new AbortController()

  constructor(urls: URL[], settings: EndpointSettings) {
    this.endpoints = urls.map((url) => new Endpoint(url, settings))
  }

  /**
   * Reads every card (in parallel). Rejects when none can be used: with a single endpoint, with its
   * own error; with several, one error listing each endpoint's. An endpoint whose card failed while
   * another's loaded stays unhealthy and is retried after its backoff.
   */
  async load(signal?: AbortSignal): Promise<void> {
    const stop = () => this.reads.abort(signal?.reason)
    if (signal?.aborted) stop()
    signal?.addEventListener('abort', stop, { once: true })
    try {
      await Promise.all(this.endpoints.map((endpoint) => endpoint.refresh(this.reads.signal)))
    } finally {
      signal?.removeEventListener('abort', stop)
    }
    if (this.endpoints.some((endpoint) => endpoint.loaded)) return
    if (this.reads.signal.aborted) throw new A2aError('A2A_CARD_UNREACHABLE', 'The load was stopped while the agent card was being read.')
    const errors = this.endpoints.map((endpoint) => endpoint.loadError
      ?? new A2aError('A2A_CARD_UNREACHABLE', `Could not read the agent card at ${endpoint.cardUrl.href}.`))
    if (errors.length === 1) throw errors[0]
    const code = errors.some((error) => error.code === 'A2A_CARD_UNREACHABLE') ? 'A2A_CARD_UNREACHABLE'
      : errors.every((error) => error.code === 'A2A_CARD_UNVERIFIED') ? 'A2A_CARD_UNVERIFIED' : 'A2A_CARD_INVALID'
    throw new A2aError(code, `None of the ${errors.length} agent hosts could be used: ${errors.map((error, i) => `${i + 1}. ${headChars(error.message, 400)}`).join(' ')}`)
  }

  /** Starts reading, in the background, the cards that are due (healthy: after `cardRefreshInterval`; unhealthy: at their retry). */
  refreshDue(): void {
    if (this.reads.signal.aborted) return
    const now = performance.now()
    for (const endpoint of this.endpoints) if (endpoint.due(now)) void endpoint.refresh(this.reads.signal)
  }

  /** Reads every card now; resolves with the endpoints' health once done. */
  async refreshAll(): Promise<EndpointHealth[]> {
    if (!this.reads.signal.aborted) await Promise.all(this.endpoints.map((endpoint) => endpoint.refresh(this.reads.signal)))
    return this.snapshot()
  }

  /**
   * Where a task should start, best first: the healthy endpoints by fewest outstanding tasks (ties:
   * round-robin after the endpoint that took the last task), then the unhealthy ones by their retry time
   * (past backoff first). Endpoints whose card was never read cannot take a task.
   */
  order(): Endpoint[] {
    const n = this.endpoints.length
    const rank = (endpoint: Endpoint) => (this.endpoints.indexOf(endpoint) - this.cursor + n) % n
    const usable = this.endpoints.filter((endpoint) => endpoint.loaded)
    const up = usable.filter((endpoint) => endpoint.healthy)
      .sort((a, b) => a.outstanding - b.outstanding || rank(a) - rank(b))
    const down = usable.filter((endpoint) => !endpoint.healthy)
      .sort((a, b) => a.retryDue - b.retryDue || rank(a) - rank(b))
    return [...up, ...down]
  }

  /** `endpoint` took a task: the next tie goes to the endpoint after it. */
  began(endpoint: Endpoint): void {
    this.cursor = (this.endpoints.indexOf(endpoint) + 1) % this.endpoints.length
  }

  snapshot(): EndpointHealth[] {
    return this.endpoints.map((endpoint) => endpoint.snapshot())
  }

  /** Stops the card reads in flight and waits for them. */
  async dispose(): Promise<void> {
    this.reads.abort(new Error('the provider was disposed'))
    await Promise.all(this.endpoints.map((endpoint) => endpoint.idle()))
  }
}
