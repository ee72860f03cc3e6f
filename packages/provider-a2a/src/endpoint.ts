import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client'
import {
  ClientFactory as ClientFactoryV03, ClientFactoryOptions as ClientFactoryOptionsV03, JsonRpcTransportFactory as JsonRpcTransportFactoryV03,
} from 'a2a-sdk-v03/client'
import { headChars, peerLine, type Redactor } from '@cordis-subagents/shared'
import { type CardCheck, cardUrlOf, fetchAgentCard, type LoadedCard, type ProtocolFamily } from './card.js'
import { A2aError } from './errors.js'
import { type A2aWire, wireV1 } from './wire.js'
import { wireV03 } from './wire-v03.js'

/** What every endpoint of one provider shares. */
export interface EndpointSettings {
  check: CardCheck
  /** Bounded by `cardTimeout`. */
  cardFetch: typeof fetch
  /** Bounded by the request limits, recording each exchange (see host-failure.ts). */
  requestFetch: typeof fetch
  redactor: Redactor
  cardRefreshInterval: number
  retryDelay: number
  /** Called when an endpoint turns unhealthy or healthy again (the plugin logs it). */
  onHealth: (endpoint: Endpoint) => void
}

/** An endpoint's card, its client, and how diagnostics name it. */
export interface EndpointCard {
  card: LoadedCard
  wire: A2aWire
  /** `"<card name>" at <origin>`. */
  agentName: string
}

/** An endpoint's state for observers (`provider.endpoints()`). */
export interface EndpointHealth {
  /** The configured URL. */
  url: string
  /** Where its card is read. */
  cardUrl: string
  /** `host:port`: what a run's info carries as `origin`. */
  host: string
  healthy: boolean
  /** `Date.now()` when it last turned healthy or unhealthy (at load: when its card was first read). */
  since: number
  /** While unhealthy: what failed last (a card read, a send, a task it lost). */
  lastError?: string
  /** While unhealthy: when its card is read again (ms since the epoch, as the wall clock reads at the snapshot). */
  retryAt?: number
  /** Tasks started on it whose run has not ended (a start in flight counts). */
  outstanding: number
  /** The protocol spoken with it, once its card was read. */
  protocol?: ProtocolFamily
  /** Its card says it streams. */
  streaming?: boolean
}

/** Longest error kept per endpoint. */
const MAX_ERROR_CHARS = 500

/** One agent host behind the provider: its card (read at load, then again now and then), health and load. */
export class Endpoint {
  readonly cardUrl: URL
  readonly host: string
  loaded?: EndpointCard
  healthy = false
  since = Date.now()
  lastError?: string
  /** While unhealthy: `performance.now()` from which its card is read again (0 before the first failure). */
  retryDue = 0
  outstanding = 0
  /** Failures in a row: the retry delay doubles with each. */
  private failures = 0
  /** `performance.now()` when its card was last read (or failed to be). */
  private checkedAt = 0
  private reading?: Promise<void>
  /** The card as read last: a card that did not change keeps its client. */
  private cardKey = ''
  /** Why the card could not be read while it never was (for the load error when every endpoint fails). */
  loadError?: A2aError

  constructor(readonly url: URL, private readonly settings: EndpointSettings) {
    this.cardUrl = cardUrlOf(url)
    this.host = url.host
  }

  /** Reads the card (once at a time); a card that cannot be used marks the endpoint unhealthy. Never rejects. */
  refresh(signal: AbortSignal): Promise<void> {
    return this.reading ??= this.read(signal).finally(() => this.reading = undefined)
  }

  /** Resolves once no card read is in flight. */
  async idle(): Promise<void> {
    await this.reading
  }

  /**
   * Its card is due to be read again at `now` (`performance.now()`): a healthy one after `cardRefreshInterval`, an unhealthy
   * one at `retryDue`. Both waits are monotonic: a wall-clock step neither skips nor stretches them.
   */
  due(now: number): boolean {
    if (this.reading) return false
    return this.healthy ? now - this.checkedAt >= this.settings.cardRefreshInterval : now >= this.retryDue
  }

  private async read(signal: AbortSignal): Promise<void> {
    const { settings } = this
    try {
      const card = await fetchAgentCard(this.cardUrl, withSignal(settings.cardFetch, signal), settings.check)
      const key = JSON.stringify(card)
      if (!this.loaded || key !== this.cardKey) {
        const wire = await wireFor(card, settings.requestFetch).catch((error) => {
          throw new A2aError('A2A_CARD_INVALID', `The agent card at ${this.cardUrl.href} cannot be used: ${String((error as Error)?.message ?? error)}`)
        })
        this.loaded = { card, wire, agentName: `"${settings.redactor.redact(oneLine(card.name, 80))}" at ${this.cardUrl.origin}` }
        this.cardKey = key
      }
      this.checkedAt = performance.now()
      this.markUp()
    } catch (error) {
      if (signal.aborted) return
      // A card's problems quote its text (interface URLs): credentials it echoes are masked.
      const clean = error instanceof A2aError
        ? new A2aError(error.code, settings.redactor.redact(error.message), { cause: error.cause })
        : new A2aError('A2A_CARD_UNREACHABLE', `Could not read the agent card at ${this.cardUrl.href}: ${settings.redactor.redact(String(error))}`)
      if (!this.loaded) this.loadError = clean
      this.checkedAt = performance.now()
      this.markDown(clean.message)
    }
  }

  /** A card read, a send or a task failed because of this host: unhealthy, retried after a backoff. */
  markDown(why: string): void {
    const was = this.healthy
    if (was || this.failures === 0) this.since = Date.now()
    this.healthy = false
    this.lastError = headChars(this.settings.redactor.redact(why), MAX_ERROR_CHARS)
    this.failures = Math.min(this.failures + 1, 30)
    const { retryDelay, cardRefreshInterval } = this.settings
    this.retryDue = performance.now() + Math.min(retryDelay * 2 ** (this.failures - 1), Math.max(retryDelay, cardRefreshInterval))
    if (was || this.failures === 1) this.settings.onHealth(this)
  }

  /** The host answered (its card, a task it accepted or finished): healthy. */
  markUp(): void {
    if (this.healthy || !this.loaded) return
    // Told only when it recovers: the first read at load is no news.
    const recovered = this.failures > 0
    this.healthy = true
    this.since = Date.now()
    this.lastError = undefined
    this.failures = 0
    this.retryDue = 0
    if (recovered) this.settings.onHealth(this)
  }

  snapshot(): EndpointHealth {
    const card = this.loaded?.card
    return {
      url: this.url.href, cardUrl: this.cardUrl.href, host: this.host, healthy: this.healthy, since: this.since,
      ...this.healthy ? {} : { lastError: this.lastError ?? 'its card was not read yet', retryAt: this.retryAtWall() },
      outstanding: this.outstanding,
      ...card ? { protocol: card.protocol, streaming: card.streaming } : {},
    }
  }

  /** `retryDue` as a wall-clock time, for observers (0 before the first failure). */
  private retryAtWall(): number {
    return this.retryDue ? Math.round(Date.now() + this.retryDue - performance.now()) : 0
  }
}

/** The client of the card's protocol version, on our bounded fetch (the SDK picks the first usable interface). */
async function wireFor(card: LoadedCard, fetchImpl: typeof fetch): Promise<A2aWire> {
  if (card.protocol === '1.0') {
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    }))
    return wireV1(await factory.createFromAgentCard(card.card))
  }
  const factory = new ClientFactoryV03(ClientFactoryOptionsV03.createFrom(ClientFactoryOptionsV03.default, {
    transports: [new JsonRpcTransportFactoryV03({ fetchImpl })],
  }))
  return wireV03(await factory.createFromAgentCard(card.card))
}

function withSignal(fetcher: typeof fetch, signal: AbortSignal): typeof fetch {
  return (input, init = {}) => fetcher(input, { ...init, signal })
}

/** Card text as one line for the model: no control or invisible formatting characters, cut at `max`. */
export function oneLine(text: string, max: number): string {
  const flat = peerLine(String(text)).replace(/\s+/g, ' ').trim()
  return headChars(flat, max, '…')
}
