// How long a refusing endpoint asks us to wait: `retry-after-ms` (OpenAI's own, milliseconds), else
// `Retry-After` as seconds or as an HTTP date (RFC 9110 §10.2.3). Bounded: a wait past the timer
// ceiling is that ceiling (the model gate clamps it further, `rateLimit.maxRetryAfterMs`).
import { MAX_TIMER_MS } from '@cordis-subagents/shared'

/** The header values are read only this far: a date or a number is far shorter. */
const MAX_HEADER_LENGTH = 64

/** The wait the headers announce, in ms (0 for a date in the past); undefined when they name none or none readable. */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = headers?.get('retry-after-ms')?.slice(0, MAX_HEADER_LENGTH).trim()
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return bounded(Number(ms))
  const value = headers?.get('retry-after')?.slice(0, MAX_HEADER_LENGTH).trim()
  if (!value) return undefined
  if (/^\d+$/.test(value)) return bounded(Number(value) * 1000)
  // An HTTP date names its day of the week; anything else Date.parse might accept is not one.
  if (!/^[A-Za-z]{3},/.test(value)) return undefined
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : bounded(at - now)
}

function bounded(ms: number): number {
  return Math.min(Math.max(0, Math.ceil(ms)), MAX_TIMER_MS)
}

/** The statuses the model gate treats as a refusal for rate: 429 Too Many Requests, 503 Service Unavailable. */
export function isRateRefusal(status: number): boolean {
  return status === 429 || status === 503
}

/**
 * A fetch that marks a 429 or 503 response `x-should-retry: false`, so the OpenAI SDK hands it
 * straight back instead of retrying it on its own (the model gate retries, for every caller at once).
 * Every other response, and every other retry of the SDK (timeouts, refused connections, 5xx), is unchanged.
 */
export function gateRetries(inner: typeof fetch): typeof fetch {
  return async (input, init) => {
    const response = await inner(input, init)
    if (!isRateRefusal(response.status)) return response
    const headers = new Headers(response.headers)
    headers.set('x-should-retry', 'false')
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
  }
}

/** The longest the OpenAI SDK waits before one of its own retries (or the attempt's `timeout`, when shorter). */
export const MAX_SDK_RETRY_WAIT_MS = 60_000

/**
 * A fetch whose responses the OpenAI SDK may retry itself (408, 409, 5xx, a 429 or 503 the model gate left to it) carry
 * a wait it can keep: the SDK sleeps exactly what `retry-after-ms` or `Retry-After` say (days, for a server that says so;
 * an unreadable or past-the-timer value fires at once with a warning). The announced wait, read as the gate reads it, is
 * put back as `retry-after-ms`, at most `maxWaitMs`; none readable leaves the SDK its own back-off.
 */
export function boundedRetryWaits(inner: typeof fetch, maxWaitMs: number): typeof fetch {
  return async (input, init) => {
    const response = await inner(input, init)
    const { headers } = response
    if (response.ok || headers.get('x-should-retry') === 'false' || (!headers.has('retry-after') && !headers.has('retry-after-ms'))) {
      return response
    }
    const wait = retryAfterMs(headers)
    const kept = new Headers(headers)
    kept.delete('retry-after')
    kept.delete('retry-after-ms')
    if (wait !== undefined) kept.set('retry-after-ms', String(Math.min(wait, maxWaitMs)))
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers: kept })
  }
}
