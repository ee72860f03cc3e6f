import type { AgentCard } from '@a2a-js/sdk'
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client'
import type { AgentCard as AgentCard03 } from 'a2a-sdk-v03'
import {
  ClientFactory as ClientFactoryV03, ClientFactoryOptions as ClientFactoryOptionsV03, JsonRpcTransportFactory as JsonRpcTransportFactoryV03,
} from 'a2a-sdk-v03/client'
import { countProblem, durationProblem, Redactor, stripControl } from '@cordis-subagents/shared'
import type { ProviderStartRequest, SubagentProvider, SubagentRun } from '@cordis-subagents/subagents-service'
import { boundedFetch, type FetchLimits } from './bounded-fetch.js'
import { cardUrlOf, fetchAgentCard, type LoadedCard, type ProtocolFamily, urlProblem } from './card.js'
import { Config } from './config.js'
import { A2aError } from './errors.js'
import { stripInvisible } from './invisible.js'
import { type LiveRun, startA2aRun } from './run.js'
import { type A2aWire, wireV1 } from './wire.js'
import { wireV03 } from './wire-v03.js'

export interface ProviderOptions extends Config {
  /** Environment to read `bearerTokenEnv` / `headersFromEnv` from (default `process.env`). */
  env?: NodeJS.ProcessEnv
  /** Aborts the card fetch (the plugin passes its disposal). */
  signal?: AbortSignal
  /** Debug log (the plugin passes its logger's `debug`); nothing is logged without it. */
  debug?: (format: string, ...args: unknown[]) => void
}

/** The a2a provider, plus the agent card it was built from. */
export interface A2aProvider extends SubagentProvider {
  /** The card in its version's SDK shape, with only the interfaces this provider may use. */
  readonly card: AgentCard | AgentCard03
  /** The protocol spoken with this remote: `1.0` when its card offers it, else `0.3` (A2A 0.2/0.3). */
  readonly protocol: ProtocolFamily
  /** Where the card was read from. */
  readonly cardUrl: string
  /** Closes every run's requests: starting ones at once (their start rejects `ABORTED`), started ones disposed (their task cancelled). */
  dispose(): Promise<void>
}

/** The schema's defaults: the one place they are written (a programmatic caller gets the same). */
const DEFAULTS = Config({ url: 'http://127.0.0.1/' })

/** The redactor's reach for short texts (the shared default); the output may need more. */
const REDACT_CHARS = 64 * 1024

/** Longest description taken from the card (the model reads it in the tool description). */
const MAX_CARD_DESCRIPTION = 300

/**
 * Builds the `a2a` provider: checks the config, fetches and checks the agent card (bounded by
 * `cardTimeout`), and makes the client of the card's protocol version (the 1.x SDK for A2A 1.0,
 * the 0.3 SDK for A2A 0.2/0.3) that every run uses. The plugin calls this at load;
 * it is exported for programmatic use. Rejects `A2A_INVALID_CONFIG`, `A2A_CARD_UNREACHABLE` or
 * `A2A_CARD_INVALID` naming the URL and what is wrong.
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
    ?? countProblem('maxResponseBytes', settings.maxResponseBytes, { min: 1024 })
    ?? countProblem('maxStreamBytes', settings.maxStreamBytes, { min: 1024 })
    ?? countProblem('maxOutputBytes', settings.maxOutputBytes, { min: 1 })
  if (problem) throw invalid(problem)
  if (typeof settings.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(settings.name)) throw invalid(`name must be 1-64 of A-Z a-z 0-9 _ -, got ${JSON.stringify(settings.name)}.`)

  let url: URL
  try {
    url = new URL(options.url)
  } catch {
    throw invalid(`url ${JSON.stringify(options.url)} is not a URL. Give the remote agent's base URL (http://127.0.0.1:41241) or its agent card's URL.`)
  }
  const where = urlProblem(url, settings.allowHttp)
  if (where) throw invalid(`url ${url.origin}${url.pathname} cannot be used: ${where}.`)
  const { headers, secrets } = authHeaders(options, options.env ?? process.env)
  // One redactor for everything remote text reaches: the description, progress, output (up to
  // maxOutputBytes, hence the size) and diagnostics. A remote may echo our credentials anywhere.
  const redactor = new Redactor(secrets, { maxChars: Math.max(REDACT_CHARS, settings.maxOutputBytes) })

  const cardUrl = cardUrlOf(url)
  const cardFetch = boundedFetch({
    requestTimeout: settings.cardTimeout, idleTimeout: settings.cardTimeout,
    maxResponseBytes: settings.maxResponseBytes, maxStreamBytes: settings.maxResponseBytes,
  }, () => headers)
  let card: LoadedCard
  try {
    card = await fetchAgentCard(cardUrl, withSignal(cardFetch, options.signal), settings)
  } catch (error) {
    // A card's problems quote its text (interface URLs): credentials it echoes are masked.
    if (error instanceof A2aError) throw new A2aError(error.code, stripInvisible(redactor.redact(error.message)), { cause: error.cause })
    throw error
  }

  const limits: FetchLimits = {
    requestTimeout: settings.requestTimeout, idleTimeout: settings.idleTimeout,
    maxResponseBytes: settings.maxResponseBytes, maxStreamBytes: settings.maxStreamBytes,
  }
  const fetchImpl = boundedFetch(limits, () => headers)
  let wire: A2aWire
  try {
    wire = await wireFor(card, fetchImpl)
  } catch (error) {
    throw new A2aError('A2A_CARD_INVALID', `The agent card at ${cardUrl.href} cannot be used: ${redactor.redact(String((error as Error)?.message ?? error))}`)
  }
  const agentName = `"${redactor.redact(oneLine(card.name, 80))}" at ${cardUrl.origin}`
  const live = new Set<LiveRun>()
  const runSettings = {
    debug: options.debug ?? (() => {}),
    live,
    wire,
    streaming: card.streaming,
    agentName,
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
    cardUrl: cardUrl.href,
    start: (request: ProviderStartRequest): Promise<SubagentRun> => startA2aRun(runSettings, request),
    dispose: async () => {
      await Promise.all([...live].map((run) => run.stop()))
    },
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

function withSignal(fetcher: typeof fetch, signal: AbortSignal | undefined): typeof fetch {
  if (!signal) return fetcher
  return (input, init = {}) => fetcher(input, { ...init, signal })
}

function invalid(problem: string): A2aError {
  return new A2aError('A2A_INVALID_CONFIG', `provider-a2a: config.${problem}`)
}

/** Card text as one line for the model: no control or invisible formatting characters, cut at `max`. */
function oneLine(text: string, max: number): string {
  const flat = stripInvisible(stripControl(String(text))).replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max)}…` : flat
}
