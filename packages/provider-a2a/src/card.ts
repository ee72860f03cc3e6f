import type { AgentCard } from '@a2a-js/sdk'
import type { AgentCard as AgentCard03 } from 'a2a-sdk-v03'
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client'
import { describeError, isLoopback } from '@cordis-subagents/shared'
import { LimitError, raiseAdvice } from './bounded-fetch.js'
import type { CardVerifier } from './card-signature.js'
import { A2aError } from './errors.js'

/** The well-known path of an agent card under a base URL (A2A 1.0 and 0.3). */
export const AGENT_CARD_PATH = '/.well-known/agent-card.json'

/** Protocol bindings this provider speaks over A2A 1.0 (the SDK's JSON-RPC and HTTP+JSON transports). */
export const SUPPORTED_BINDINGS = ['JSONRPC', 'HTTP+JSON'] as const

/**
 * Over A2A 0.2/0.3: JSON-RPC only. Every 0.2 agent and nearly every 0.3 agent offers it, and the
 * 0.3 SDK's HTTP+JSON client drops `append` from artifact updates (chunks would replace each other).
 */
export const SUPPORTED_BINDINGS_V03 = ['JSONRPC'] as const

/** The card's URL for a configured `url`: itself when its path ends in `.json`, else the well-known path under it. */
export function cardUrlOf(url: URL): URL {
  if (url.pathname.endsWith('.json')) return url
  const base = new URL(url)
  base.pathname = base.pathname.replace(/\/+$/, '') + AGENT_CARD_PATH
  return base
}

export interface CardCheck {
  allowCrossOrigin: boolean
  allowHttp: boolean
  /** With `cardKey` / `cardJwksUrl`: the card's signature must verify (card-signature.ts). */
  verify?: CardVerifier
}

/**
 * Fetches the agent card at `cardUrl` with `fetcher` (bounded by the caller) and checks it: a 200
 * answer with a JSON content type, a JSON object with a name, and at least one interface we speak
 * (A2A 1.x, else 0.2/0.3) on the card's own origin (unless `allowCrossOrigin`). Throws `A2A_CARD_UNREACHABLE` /
 * `A2A_CARD_INVALID` naming the URL and what is wrong.
 */
export async function fetchAgentCard(cardUrl: URL, fetcher: typeof fetch, check: CardCheck): Promise<LoadedCard> {
  const where = `the agent card at ${cardUrl.href}`
  let response: Response
  try {
    response = await fetcher(cardUrl, { headers: { Accept: 'application/json', 'A2A-Version': '1.0' } })
  } catch (error) {
    const advice = `Check that the remote agent is running and \`url\` is right.${raiseAdvice(error, 'it')}`
    throw new A2aError('A2A_CARD_UNREACHABLE', `Could not fetch ${where}: ${reachProblem(error)}. ${advice}`, { cause: error })
  }
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    const code = error instanceof LimitError ? 'A2A_CARD_INVALID' : 'A2A_CARD_UNREACHABLE'
    throw new A2aError(code, `Could not read ${where}: ${reachProblem(error)}.${raiseAdvice(error, 'the agent')}`, { cause: error })
  }
  if (response.status !== 200) {
    throw new A2aError('A2A_CARD_UNREACHABLE', `Could not fetch ${where}: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}. Check \`url\` (a base URL, or the card's own URL ending in .json).`)
  }
  const type = response.headers.get('content-type') ?? ''
  if (!/^application\/([\w.+-]*\+)?json\b/i.test(type.trim())) {
    throw new A2aError('A2A_CARD_INVALID', `${capitalised(where)} has content type ${JSON.stringify(type || '(none)')}; an agent card is served as application/json.`)
  }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (error) {
    throw new A2aError('A2A_CARD_INVALID', `${capitalised(where)} is not valid JSON: ${describeError(error)}.`)
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new A2aError('A2A_CARD_INVALID', `${capitalised(where)} is not a JSON object.`)
  }
  const fields = raw as Record<string, unknown>
  if (check.verify) await check.verify(fields, cardUrl.href)
  if (typeof fields.name !== 'string' || !fields.name.trim()) {
    throw new A2aError('A2A_CARD_INVALID', `${capitalised(where)} has no name.`)
  }
  const offered = offeredInterfaces(fields)
  if (!offered.length) {
    throw new A2aError('A2A_CARD_INVALID', `${capitalised(where)} lists no supportedInterfaces (A2A 1.0) and no top-level url (A2A 0.2/0.3): it offers nothing to talk to.`)
  }
  const checked = offered.map((entry) => ({ entry, problem: interfaceProblem(entry, cardUrl, check) }))
  const usable = (version: ProtocolFamily) => checked
    .filter(({ entry, problem }) => entry.family === version && problem === undefined)
    .map(({ entry }) => entry)
  const v1 = usable('1.0')
  const v03 = usable('0.3')
  const summary: CardSummary = {
    name: fields.name,
    description: typeof fields.description === 'string' ? fields.description : '',
    streaming: (fields.capabilities as { streaming?: unknown } | undefined)?.streaming === true,
  }
  // 1.0 is preferred when the card offers both.
  if (v1.length) {
    let card: AgentCard
    try {
      card = new DefaultAgentCardResolver().normalizeAgentCard(raw)
    } catch (error) {
      throw new A2aError('A2A_CARD_INVALID', `${capitalised(where)} is not a valid agent card: ${describeError(error)}.`)
    }
    // Only the usable interfaces, in the card's order: the SDK picks the first one it supports.
    const urls = new Set(v1.map((entry) => `${entry.binding} ${entry.url}`))
    const supportedInterfaces = (card.supportedInterfaces ?? []).filter((entry) => urls.has(`${entry.protocolBinding} ${entry.url}`))
    return { ...summary, protocol: '1.0', card: { ...card, supportedInterfaces } }
  }
  if (v03.length) {
    const [first, ...rest] = v03
    // Only the usable interfaces: the SDK picks the preferred one, then the others.
    const card = {
      ...fields, url: first.url, preferredTransport: first.binding,
      additionalInterfaces: rest.map((entry) => ({ url: entry.url, transport: entry.binding })),
    } as unknown as AgentCard03
    return { ...summary, protocol: '0.3', card }
  }
  const problems = checked.slice(0, 6).map(({ entry, problem }) => `${entry.family === '0.3' ? 'A2A 0.3 ' : ''}${entry.binding || '?'} ${entry.url || '(no url)'}: ${problem}`)
  throw new A2aError('A2A_CARD_INVALID', `${capitalised(where)} offers no interface this provider can use (${problems.join('; ')}).`)
}

/** The two protocol families this provider speaks: A2A 1.x, and A2A 0.2/0.3 (one wire format). */
export type ProtocolFamily = '1.0' | '0.3'

/** What every card gives us, whatever its version. */
interface CardSummary {
  name: string
  description: string
  /** `capabilities.streaming: true`: the agent streams (else send + polls). */
  streaming: boolean
}

/** A checked card: its version, and the card in that version's SDK shape with only the usable interfaces. */
export type LoadedCard = CardSummary & ({ protocol: '1.0'; card: AgentCard } | { protocol: '0.3'; card: AgentCard03 })

interface OfferedInterface {
  family: ProtocolFamily | undefined
  binding: string
  url: string
  version: string
}

/** Most interfaces of one card we look at (a card is read at load; this bounds the work). */
const MAX_INTERFACES = 32

/**
 * Every interface a card offers, with the protocol family it speaks: 1.0's `supportedInterfaces`
 * (each with its own `protocolVersion`; a 0.x entry there is a 0.3 endpoint), and 0.2/0.3's
 * top-level `url` (with `preferredTransport`, JSONRPC by default) and `additionalInterfaces`.
 */
function offeredInterfaces(fields: Record<string, unknown>): OfferedInterface[] {
  const text = (value: unknown) => typeof value === 'string' ? value : ''
  const offered: OfferedInterface[] = []
  if (Array.isArray(fields.supportedInterfaces)) {
    for (const entry of fields.supportedInterfaces.slice(0, MAX_INTERFACES)) {
      const given = (entry && typeof entry === 'object' ? entry : {}) as Record<string, unknown>
      const version = text(given.protocolVersion)
      offered.push({ family: familyOf(version, '1.0'), binding: text(given.protocolBinding), url: text(given.url), version })
    }
  }
  if (typeof fields.url === 'string') {
    const version = text(fields.protocolVersion)
    const family = familyOf(version, '0.3')
    offered.push({ family, binding: text(fields.preferredTransport) || 'JSONRPC', url: fields.url, version })
    if (Array.isArray(fields.additionalInterfaces)) {
      for (const entry of fields.additionalInterfaces.slice(0, MAX_INTERFACES)) {
        const given = (entry && typeof entry === 'object' ? entry : {}) as Record<string, unknown>
        offered.push({ family, binding: text(given.transport), url: text(given.url), version })
      }
    }
  }
  return offered
}

/** 1.x → 1.0, 0.2.x / 0.3.x → 0.3, no version → `fallback` (what the card's shape says), anything else → none. */
function familyOf(version: string, fallback: ProtocolFamily): ProtocolFamily | undefined {
  if (!version) return fallback
  if (/^1(\.|$)/.test(version)) return '1.0'
  if (/^0\.[23](\.|$)/.test(version)) return '0.3'
  return undefined
}

function interfaceProblem(entry: OfferedInterface, cardUrl: URL, check: CardCheck): string | undefined {
  if (!(SUPPORTED_BINDINGS as readonly string[]).includes(entry.binding)) return `binding ${JSON.stringify(entry.binding)} is not one of ${SUPPORTED_BINDINGS.join(', ')}`
  if (!entry.family) return `protocol version ${JSON.stringify(entry.version)} is not 1.x, 0.3 or 0.2`
  if (entry.family === '0.3' && !(SUPPORTED_BINDINGS_V03 as readonly string[]).includes(entry.binding)) return `binding ${JSON.stringify(entry.binding)} is not used over A2A 0.2/0.3 (only ${SUPPORTED_BINDINGS_V03.join(', ')})`
  let url: URL
  try {
    url = new URL(entry.url)
  } catch {
    return 'the url is not a valid URL'
  }
  const problem = urlProblem(url, check.allowHttp)
  if (problem) return problem
  if (!check.allowCrossOrigin && url.origin !== cardUrl.origin) return `it is on another origin than the card (${url.origin}; set allowCrossOrigin to follow it)`
  return undefined
}

/** Why `url` may not be used: not http(s), or plain http to a host that is not loopback. */
export function urlProblem(url: URL, allowHttp: boolean): string | undefined {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `${url.protocol} is not http: or https:`
  if (url.username || url.password) return 'it carries credentials (user:password@); use bearerTokenEnv or headersFromEnv'
  if (url.protocol === 'http:' && !allowHttp && !isLoopback(url.hostname)) {
    return `plain http to ${url.hostname}, which is not a loopback host (use https, or set allowHttp)`
  }
  return undefined
}

function reachProblem(error: unknown): string {
  if (error instanceof LimitError) return error.message
  const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`
  return describeError(error)
}

function capitalised(text: string): string {
  return text[0].toUpperCase() + text.slice(1)
}
