import type { AgentCard } from '@a2a-js/sdk'
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client'
import { describeError } from '@cordis-subagents/shared'
import { LimitError } from './bounded-fetch.js'
import { A2aError } from './errors.js'

/** The well-known path of an agent card under a base URL (A2A 1.0). */
export const AGENT_CARD_PATH = '/.well-known/agent-card.json'

/** Protocol bindings this provider speaks (the SDK's JSON-RPC and HTTP+JSON transports). */
export const SUPPORTED_BINDINGS = ['JSONRPC', 'HTTP+JSON'] as const

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
}

/**
 * Fetches the agent card at `cardUrl` with `fetcher` (bounded by the caller) and checks it: a 200
 * answer with a JSON content type, a JSON object with a name, and at least one interface we speak
 * on the card's own origin (unless `allowCrossOrigin`). Throws `A2A_CARD_UNREACHABLE` /
 * `A2A_CARD_INVALID` naming the URL and what is wrong.
 */
export async function fetchAgentCard(cardUrl: URL, fetcher: typeof fetch, check: CardCheck): Promise<AgentCard> {
  const where = `the agent card at ${cardUrl.href}`
  let response: Response
  try {
    response = await fetcher(cardUrl, { headers: { Accept: 'application/json', 'A2A-Version': '1.0' } })
  } catch (error) {
    throw new A2aError('A2A_CARD_UNREACHABLE', `Could not fetch ${where}: ${reachProblem(error)}. Check that the remote agent is running and \`url\` is right.`, { cause: error })
  }
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    throw new A2aError(error instanceof LimitError ? 'A2A_CARD_INVALID' : 'A2A_CARD_UNREACHABLE', `Could not read ${where}: ${reachProblem(error)}.`, { cause: error })
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
  if (typeof fields.name !== 'string' || !fields.name.trim()) {
    throw new A2aError('A2A_CARD_INVALID', `${capitalised(where)} has no name.`)
  }
  if (!Array.isArray(fields.supportedInterfaces) || !fields.supportedInterfaces.length) {
    const legacy = typeof fields.url === 'string' ? ' It looks like an A2A 0.3 card (a top-level url); this provider speaks A2A 1.0.' : ''
    throw new A2aError('A2A_CARD_INVALID', `${capitalised(where)} lists no supportedInterfaces.${legacy}`)
  }
  let card: AgentCard
  try {
    card = new DefaultAgentCardResolver().normalizeAgentCard(raw)
  } catch (error) {
    throw new A2aError('A2A_CARD_INVALID', `${capitalised(where)} is not a valid agent card: ${describeError(error)}.`)
  }
  const usable = card.supportedInterfaces.filter((entry) => interfaceProblem(entry, cardUrl, check) === undefined)
  if (!usable.length) {
    const problems = card.supportedInterfaces.slice(0, 4).map((entry) => `${entry.protocolBinding || '?'} ${entry.url || '(no url)'}: ${interfaceProblem(entry, cardUrl, check)}`)
    throw new A2aError('A2A_CARD_INVALID', `${capitalised(where)} offers no interface this provider can use (${problems.join('; ')}).`)
  }
  // Only the usable interfaces, in the card's order: the SDK picks the first one it supports.
  return { ...card, supportedInterfaces: usable }
}

function interfaceProblem(entry: AgentCard['supportedInterfaces'][number], cardUrl: URL, check: CardCheck): string | undefined {
  if (!(SUPPORTED_BINDINGS as readonly string[]).includes(entry.protocolBinding)) return `binding ${JSON.stringify(entry.protocolBinding)} is not one of ${SUPPORTED_BINDINGS.join(', ')}`
  if (entry.protocolVersion && !entry.protocolVersion.startsWith('1.')) return `protocol version ${JSON.stringify(entry.protocolVersion)} is not 1.x`
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

export function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
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
