/**
 * Telling a host that failed from a host that answered. The SDK clients turn an HTTP status into
 * message text, so the one fetch every endpoint uses records, per run (keyed by the run's abort
 * signal, the one thing the SDKs pass through to fetch), what its latest request got: a status,
 * or an error before any answer.
 */
import { headChars } from '@cordis-subagents/shared'
import { LimitError } from './bounded-fetch.js'

/** What the latest request of one run got from its host. */
export interface Exchange {
  /** The HTTP status, once headers came. */
  status?: number
  /** Thrown before any answer (connect, TLS, a timeout of ours). */
  failure?: unknown
}

const exchanges = new WeakMap<AbortSignal, Exchange>()

/** Starts recording the requests made with `signal` (idempotent); the record lives as long as the signal. */
export function watchExchanges(signal: AbortSignal): Exchange {
  let exchange = exchanges.get(signal)
  if (!exchange) exchanges.set(signal, exchange = {})
  return exchange
}

/** `fetcher`, recording each request's outcome for the run whose signal it carries. */
export function recordingFetch(fetcher: typeof fetch): typeof fetch {
  return async (input, init) => {
    const exchange = init?.signal ? exchanges.get(init.signal) : undefined
    if (exchange) {
      exchange.status = undefined
      exchange.failure = undefined
    }
    try {
      const response = await fetcher(input, init)
      if (exchange) exchange.status = response.status
      return response
    } catch (error) {
      if (exchange) exchange.failure = error
      throw error
    }
  }
}

/**
 * Errors of connecting, so the request never reached the host: another host may take it without
 * the task running twice. A reset or a closed socket is not here: the host may have read the
 * request before it went.
 */
const CONNECT_CODES = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
])

/** Errors of a connection that broke (the host went away, or a proxy cut it). */
const BROKEN_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'ETIMEDOUT'])

/** The error codes in `error` and its causes (bounded: cause chains and aggregates can be long or cyclic). */
function codesOf(error: unknown): string[] {
  const codes: string[] = []
  const queue = [error]
  for (let i = 0; i < queue.length && i < 16; i++) {
    const item = queue[i] as { code?: unknown; cause?: unknown; errors?: unknown } | undefined
    if (!item || typeof item !== 'object') continue
    if (typeof item.code === 'string') codes.push(item.code)
    if (item.cause) queue.push(item.cause)
    if (Array.isArray(item.errors)) queue.push(...item.errors.slice(0, 4))
  }
  return codes
}

/** The request never reached the host (refused, no such host, unreachable, TLS refused). */
function isConnectFailure(error: unknown): boolean {
  return codesOf(error).some((code) => CONNECT_CODES.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('CERT_'))
}

/** The connection failed or broke (a connect failure, a reset, a socket the host closed mid-answer). */
export function isNetworkFailure(error: unknown): boolean {
  if (isConnectFailure(error)) return true
  if (codesOf(error).some((code) => BROKEN_CODES.has(code))) return true
  // undici: "fetch failed" (no answer) and "terminated" (the body broke off), causes aside.
  return error instanceof TypeError && /^(fetch failed|terminated)$/.test(error.message)
}

/** 5xx but 504: the host (or the gateway before it) says it did not take the request. */
function isRefusingStatus(status: number | undefined): boolean {
  return status !== undefined && status >= 500 && status <= 599 && status !== 504
}

/** How a send that got no task id failed, by what its host did. */
export interface SendFailure {
  /** The host is unreachable or failing: mark it unhealthy. */
  hostDown: boolean
  /** The host never took the request: another may, and the task still runs at most once. */
  retryElsewhere: boolean
  /** Short, for the list of endpoints tried. */
  why: string
}

export function classifySend(exchange: Exchange, error: unknown): SendFailure {
  const { status, failure } = exchange
  if (status === undefined && failure !== undefined) {
    const connect = isConnectFailure(failure)
    const hostDown = connect || failure instanceof LimitError || isNetworkFailure(failure)
    return { hostDown, retryElsewhere: connect, why: describeFailure(failure) }
  }
  if (isRefusingStatus(status)) return { hostDown: true, retryElsewhere: true, why: `HTTP ${status}` }
  if (status !== undefined && status >= 500) return { hostDown: true, retryElsewhere: false, why: `HTTP ${status}` }
  return { hostDown: false, retryElsewhere: false, why: describeFailure(error) }
}

/** An error as a short phrase: the network code when there is one. */
export function describeFailure(error: unknown): string {
  if (error instanceof LimitError) return error.message
  const code = codesOf(error).find((item) => item !== 'ABORT_ERR')
  const message = error instanceof Error ? error.message || error.name : String(error)
  return headChars(code && !message.includes(code) ? `${message} (${code})` : message, 300)
}
