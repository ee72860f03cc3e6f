import type { AgentCard } from '@a2a-js/sdk'
import type { AgentCard as AgentCard03 } from 'a2a-sdk-v03'
import { Logger } from 'cordis'
import { countProblem, durationProblem, isName, type LogLine, Redactor } from '@cordis-subagents/shared'
import type { ProviderStartRequest, SubagentProvider, SubagentRun } from '@cordis-subagents/subagents-service'
import { boundedFetch, type FetchLimits } from './bounded-fetch.js'
import { type ProtocolFamily, urlProblem } from './card.js'
import { cardVerifier } from './card-signature.js'
import { Config, MAX_ENDPOINTS } from './config.js'
import { type EndpointHealth, oneLine } from './endpoint.js'
import { EndpointPool } from './endpoint-pool.js'
import { A2aError } from './errors.js'
import { recordingFetch } from './host-failure.js'
import { restoreOnPool, startOnPool } from './pool-start.js'
import { SdkConsole } from './sdk-log.js'
import { StartConnections } from './start-connections.js'
import { type LiveRun } from './run.js'

export interface ProviderOptions extends Config {
  /** Environment to read `bearerTokenEnv` / `headersFromEnv` from (default `process.env`). */
  env?: NodeJS.ProcessEnv
  /** Aborts the card fetch (the plugin passes its disposal). */
  signal?: AbortSignal
  /** Debug log (the plugin passes its logger's `debug`); nothing is logged without it. */
  debug?: (format: string, ...args: unknown[]) => void
  /**
   * Warnings: what the A2A SDK's client writes on the console about a remote's junk, scrubbed, under a log budget (the
   * plugin passes its logger's `warn`; by default a cordis logger named `a2a`).
   */
  warn?: LogLine
  /** Told when an endpoint turns unhealthy or healthy again (the plugin logs it as a warning / info). */
  onHealth?: (health: EndpointHealth) => void
}

/** The a2a provider, plus the agent card it was built from. */
export interface A2aProvider extends SubagentProvider {
  /**
   * The card in its version's SDK shape, with only the interfaces this provider may use. With
   * `urls`: the card of the first endpoint (in config order) whose card was read at load.
   */
  readonly card: AgentCard | AgentCard03
  /** The protocol spoken with this remote: `1.0` when its card offers it, else `0.3` (A2A 0.2/0.3). With `urls`: that endpoint's. */
  readonly protocol: ProtocolFamily
  /** Where that card was read from. */
  readonly cardUrl: string
  /** Every endpoint's health and load, in config order (a snapshot). */
  endpoints(): EndpointHealth[]
  /** Reads every endpoint's card now (a success marks it healthy, a failure unhealthy); resolves with their health. */
  refreshEndpoints(): Promise<EndpointHealth[]>
  /**
   * Stops new starts (a later start, restore or continue rejects `ABORTED`), the card reads and the health
   * reports; a run still starting is stopped (its start rejects `ABORTED`, a task it named cancelled).
   * Runs already handed over keep going under their holders, who end them (cancel, dispose).
   */
  dispose(): Promise<void>
}

/** The schema's defaults: the one place they are written (a programmatic caller gets the same). */
const DEFAULTS = Config({ url: 'http://127.0.0.1/' })

/** The redactor's reach for short texts (the shared default); the output may need more. */
const REDACT_CHARS = 64 * 1024

/** Longest description taken from the card (the model reads it in the tool description). */
const MAX_CARD_DESCRIPTION = 300

/**
 * Builds the `a2a` provider: checks the config, reads and checks each endpoint's agent card
 * (bounded by `cardTimeout`), and makes, per endpoint, the client of its card's protocol version
 * (the 1.x SDK for A2A 1.0, the 0.3 SDK for A2A 0.2/0.3). The plugin calls this at load; it is
 * exported for programmatic use. Rejects `A2A_INVALID_CONFIG`, or `A2A_CARD_UNREACHABLE` /
 * `A2A_CARD_INVALID` naming the URL and what is wrong when no endpoint's card can be used.
 */
export async function createA2aProvider(options: ProviderOptions): Promise<A2aProvider> {
  const settings = {
    name: options.name ?? DEFAULTS.name!,
    allowHttp: options.allowHttp ?? DEFAULTS.allowHttp!,
    allowCrossOrigin: options.allowCrossOrigin ?? DEFAULTS.allowCrossOrigin!,
    cardTimeout: options.cardTimeout ?? DEFAULTS.cardTimeout!,
    requestTimeout: options.requestTimeout ?? DEFAULTS.requestTimeout!,
    idleTimeout: options.idleTimeout ?? DEFAULTS.idleTimeout!,
    pollInterval: options.pollInterval ?? DEFAULTS.pollInterval!,
    stuckTimeout: options.stuckTimeout ?? DEFAULTS.stuckTimeout!,
    cancelGrace: options.cancelGrace ?? DEFAULTS.cancelGrace!,
    parkedTimeout: options.parkedTimeout ?? DEFAULTS.parkedTimeout!,
    cardRefreshInterval: options.cardRefreshInterval ?? DEFAULTS.cardRefreshInterval!,
    retryDelay: options.retryDelay ?? DEFAULTS.retryDelay!,
    maxResponseBytes: options.maxResponseBytes ?? DEFAULTS.maxResponseBytes!,
    maxStreamBytes: options.maxStreamBytes ?? DEFAULTS.maxStreamBytes!,
    maxOutputBytes: options.maxOutputBytes ?? DEFAULTS.maxOutputBytes!,
  }
  const problem = durationProblem('cardTimeout', settings.cardTimeout, { min: 1 })
    ?? durationProblem('requestTimeout', settings.requestTimeout, { min: 1 })
    ?? durationProblem('idleTimeout', settings.idleTimeout, { min: 1 })
    ?? durationProblem('pollInterval', settings.pollInterval, { min: 50 })
    ?? durationProblem('stuckTimeout', settings.stuckTimeout, { min: 1 })
    ?? durationProblem('cancelGrace', settings.cancelGrace)
    ?? durationProblem('parkedTimeout', settings.parkedTimeout)
    ?? durationProblem('cardRefreshInterval', settings.cardRefreshInterval, { min: 10 })
    ?? durationProblem('retryDelay', settings.retryDelay, { min: 10 })
    ?? countProblem('maxResponseBytes', settings.maxResponseBytes, { min: 1024 })
    ?? countProblem('maxStreamBytes', settings.maxStreamBytes, { min: 1024 })
    ?? countProblem('maxOutputBytes', settings.maxOutputBytes, { min: 1 })
  if (problem) throw invalid(problem)
  if (!isName(settings.name)) throw invalid(`name must be 1-64 of A-Z a-z 0-9 _ -, got ${JSON.stringify(settings.name)}.`)
  const urls = endpointUrls(options, settings.allowHttp)
  const { headers, secrets } = authHeaders(options, options.env ?? process.env)
  // One redactor for everything remote text reaches: the description, progress, output (up to
  // maxOutputBytes, hence the size) and diagnostics. A remote may echo our credentials anywhere.
  const redactor = new Redactor(secrets, { maxChars: Math.max(REDACT_CHARS, settings.maxOutputBytes) })
  // The SDK clients' console lines go to our warnings, scrubbed and budgeted, while a run of this load lives.
  const sdkConsole = new SdkConsole(options.warn ?? new Logger('a2a').warn, settings.name, redactor)

  const limits: FetchLimits = {
    requestTimeout: settings.requestTimeout, idleTimeout: settings.idleTimeout,
    maxResponseBytes: settings.maxResponseBytes, maxStreamBytes: settings.maxStreamBytes,
  }
  const onHealth = options.onHealth
  const sends = new StartConnections()
  /** The provider was disposed: its pool's health is no one's news any more (a run that outlives it may still mark it). */
  let disposed = false
  const cardLimits: FetchLimits = {
    requestTimeout: settings.cardTimeout, idleTimeout: settings.cardTimeout, timeoutKey: 'cardTimeout',
    maxResponseBytes: settings.maxResponseBytes, maxStreamBytes: settings.maxResponseBytes,
  }
  const cardFetch = boundedFetch(cardLimits, () => headers)
  // The JWKS is fetched without our credentials: it is public, and may be on another host.
  const keysFetch = boundedFetch(cardLimits, () => ({}))
  const verify = cardVerifier(options, keysFetch, (url) => urlProblem(url, settings.allowHttp))
  const pool = new EndpointPool(urls, {
    check: { ...settings, verify },
    cardFetch,
    requestFetch: recordingFetch(boundedFetch(limits, () => headers, (input, init) => sends.dispatcherFor(input, init))),
    redactor,
    cardRefreshInterval: settings.cardRefreshInterval,
    retryDelay: settings.retryDelay,
    // The caller's listener must never break a start (a recovery is told from inside one) or a card read.
    onHealth: onHealth ? (endpoint) => {
      if (disposed) return
      try { onHealth(endpoint.snapshot()) } catch { /* its own failure */ }
    } : () => {},
  })
  try {
    await pool.load(options.signal)
  } catch (error) {
    await pool.dispose()
    await sends.close()
    sdkConsole.close()
    throw error
  }
  const first = pool.endpoints.find((endpoint) => endpoint.loaded)!
  const { card, agentName } = first.loaded!
  const starting = new Set<LiveRun>()
  const runSettings = {
    debug: options.debug ?? (() => {}),
    starting,
    // A run holds the send connections and the SDKs' console routing until its dispose (it may outlive this load).
    hold: () => {
      const connections = sends.hold()
      if (!connections) return undefined
      const routing = sdkConsole.hold()
      return () => {
        routing()
        return connections()
      }
    },
    requestTimeout: settings.requestTimeout,
    idleTimeout: settings.idleTimeout,
    pollInterval: settings.pollInterval,
    stuckTimeout: settings.stuckTimeout,
    cancelGrace: settings.cancelGrace,
    parkedTimeout: settings.parkedTimeout,
    maxOutputBytes: settings.maxOutputBytes,
    redactor,
  }
  const description = options.description
    ?? `the remote agent ${agentName} over A2A${card.description ? `: ${redactor.redact(oneLine(card.description, MAX_CARD_DESCRIPTION))}` : ''}`
  return {
    name: settings.name,
    description,
    // A remote agent is a fresh child that honours none of our per-request options (it is not ours to configure).
    capabilities: { persona: false, toolFilter: false, depthLimit: false },
    inheritsParentContext: false,
    card: card.card,
    protocol: card.protocol,
    cardUrl: first.cardUrl.href,
    endpoints: () => pool.snapshot(),
    refreshEndpoints: () => pool.refreshAll(),
    start: (request: ProviderStartRequest): Promise<SubagentRun> => startOnPool(pool, runSettings, request),
    restore: (record, request) => restoreOnPool(pool, runSettings, request, record),
    dispose: async () => {
      disposed = true
      // The send connections close once the last run holding them (one outliving this load) is disposed.
      const closing = sends.close()
      try {
        await Promise.all([pool.dispose(), ...[...starting].map((run) => run.stop()), closing])
      } finally {
        // What the SDKs' console budget counted is summarised (what runs outliving this load add: when the last one ends).
        sdkConsole.close()
      }
    },
  }
}

/** The configured endpoints: `url` or `urls` (exactly one), each an http(s) URL we may use, no duplicates. */
function endpointUrls(options: ProviderOptions, allowHttp: boolean): URL[] {
  const hasUrl = options.url !== undefined && options.url !== ''
  if (hasUrl === (options.urls !== undefined)) {
    throw invalid(hasUrl ? 'url and urls are both set; give one (urls for several hosts).' : 'url is required: the remote agent\'s base URL or its agent card\'s URL (or urls: a list of such URLs, one per host).')
  }
  const given = hasUrl ? [options.url!] : options.urls!
  const key = hasUrl ? 'url' : 'urls'
  if (!Array.isArray(given) || given.length < 1 || given.length > MAX_ENDPOINTS) throw invalid(`urls must list 1-${MAX_ENDPOINTS} URLs, got ${Array.isArray(given) ? given.length : typeof given}.`)
  const seen = new Set<string>()
  return given.map((text, i) => {
    const where = hasUrl ? key : `${key}[${i}]`
    let url: URL
    try {
      url = new URL(text)
    } catch {
      throw invalid(`${where} ${JSON.stringify(text)} is not a URL. Give the remote agent's base URL (http://127.0.0.1:41241) or its agent card's URL.`)
    }
    const problem = urlProblem(url, allowHttp)
    if (problem) throw invalid(`${where} ${url.origin}${url.pathname} cannot be used: ${problem}.`)
    if (seen.has(url.href)) throw invalid(`${where} ${url.href} is listed twice; list each host once.`)
    seen.add(url.href)
    return url
  })
}

/** The configured auth headers, read from the environment, and their values (to keep them out of diagnostics). */
function authHeaders(options: ProviderOptions, env: NodeJS.ProcessEnv): { headers: Record<string, string>; secrets: string[] } {
  const headers: Record<string, string> = {}
  const secrets: string[] = []
  const read = (variable: string, what: string) => {
    const value = env[variable]
    if (value === undefined || value === '') throw invalid(`${what} names the environment variable ${variable}, which is not set.`)
    if (/[\r\n]/.test(value)) throw invalid(`${what}: the environment variable ${variable} holds a line break, which cannot go in a header.`)
    secrets.push(value)
    return value
  }
  if (options.bearerToken !== undefined && options.bearerTokenEnv) throw invalid('bearerToken and bearerTokenEnv are both set; keep one.')
  if (options.bearerTokenEnv) headers.Authorization = `Bearer ${read(options.bearerTokenEnv, 'bearerTokenEnv')}`
  if (options.bearerToken !== undefined) {
    if (!options.bearerToken || /[\r\n]/.test(options.bearerToken)) throw invalid('bearerToken is empty or holds a line break (its value is not shown).')
    secrets.push(options.bearerToken)
    headers.Authorization = `Bearer ${options.bearerToken}`
  }
  for (const [name, variable] of Object.entries(options.headersFromEnv ?? {})) {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/.test(name)) throw invalid(`headersFromEnv: ${JSON.stringify(name)} is not a header name.`)
    headers[name] = read(variable, `headersFromEnv.${name}`)
  }
  return { headers, secrets }
}

function invalid(problem: string): A2aError {
  return new A2aError('A2A_INVALID_CONFIG', `provider-a2a: config.${problem}`)
}
