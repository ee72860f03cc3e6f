import { Schema } from 'cordis'
import { CodedError, count, duration } from '@cordis-subagents/shared'

// The rate-limit half of the model gate: what an adapter throws when its endpoint answers 429 or 503
// (`RateLimitedError`), the settings of the gate's shared backoff, and their bounded defaults.

/** What the endpoint said, as an adapter reports it; and, from the gate, what the call spent before it gave up. */
export interface RateLimitInfo {
  /** The endpoint as shown to people (no credentials, no query), e.g. `https://api.openai.com/v1 (model "gpt-4.1-mini")`. */
  endpoint: string
  /** The HTTP status (429, 503), when the adapter speaks HTTP. */
  status?: number
  /** The wait the endpoint announced (`Retry-After`, `retry-after-ms`), in ms; undefined when it named none. */
  retryAfterMs?: number
  /** Set by the gate when it gives up: attempts made (the first one included). */
  attempts?: number
  /** Set by the gate when it gives up: ms this call waited on the endpoint's backoff. */
  waitedMs?: number
}

/**
 * `RATE_LIMITED`: thrown by a model adapter when its endpoint refused a call for its rate (HTTP 429,
 * or 503), carrying the endpoint and the announced wait; the runtime's model gate pauses the
 * endpoint and retries. Thrown by the gate when a call's retry budget is spent: the run ends
 * `error` with this message, which names the endpoint, the attempts and the wait.
 */
export class RateLimitedError extends CodedError<'RATE_LIMITED'> implements RateLimitInfo {
  override name = 'RateLimitedError'
  readonly endpoint: string
  readonly status?: number
  readonly retryAfterMs?: number
  readonly attempts?: number
  readonly waitedMs?: number

  constructor(code: 'RATE_LIMITED', message: string, info?: RateLimitInfo, options?: { cause?: unknown }) {
    super(code, message, options)
    this.endpoint = info?.endpoint ?? 'an unnamed endpoint'
    if (info?.status !== undefined) this.status = info.status
    if (info?.retryAfterMs !== undefined) this.retryAfterMs = info.retryAfterMs
    if (info?.attempts !== undefined) this.attempts = info.attempts
    if (info?.waitedMs !== undefined) this.waitedMs = info.waitedMs
  }
}

/**
 * The signal, recognised by shape (an adapter built against another copy of this package counts
 * too): an error whose `code` is `RATE_LIMITED` and whose `endpoint` is a string.
 */
export function rateLimitOf(error: unknown): RateLimitInfo | undefined {
  if (!error || typeof error !== 'object') return undefined
  const { code, endpoint, retryAfterMs, status } = error as Partial<Record<string, unknown>>
  if (code !== 'RATE_LIMITED' || typeof endpoint !== 'string') return undefined
  const info: RateLimitInfo = { endpoint: endpoint.slice(0, 300) }
  if (typeof retryAfterMs === 'number' && Number.isFinite(retryAfterMs)) info.retryAfterMs = Math.max(0, retryAfterMs)
  if (typeof status === 'number') info.status = status
  return info
}

/** `ctx.agents` config `rateLimit`: the shared backoff of the model gate. */
export interface RateLimitConfig {
  /** false: no shared backoff; 429/503 are each adapter's own business (its retries, then an `error` stop). */
  enabled?: boolean
  /** Retries of one call after a 429/503 before it fails with `RATE_LIMITED`. */
  maxRetries?: number
  /** Most ms one call waits on its endpoint's backoff in total before it fails with `RATE_LIMITED`. */
  maxWaitMs?: number
  /** A longer announced wait (`Retry-After`) is clamped to this. */
  maxRetryAfterMs?: number
  /** The pause after a 429/503 that names no wait; it doubles with each refusal in a row, up to `maxRetryAfterMs`. */
  backoffMs?: number
  /** Most random ms added to a pause (at most a fifth of the pause), so processes sharing a key do not return in step. */
  maxJitterMs?: number
  /** Successful calls that raise a lowered endpoint's concurrency by one. */
  recoverAfter?: number
}

export type RateLimitSettings = Required<RateLimitConfig>

const RATE_LIMIT_DEFAULTS: Readonly<RateLimitSettings> = Object.freeze({
  enabled: true,
  maxRetries: 8,
  maxWaitMs: 5 * 60_000,
  maxRetryAfterMs: 60_000,
  backoffMs: 1000,
  maxJitterMs: 1000,
  recoverAfter: 4,
})

export function rateLimitSchema(): Schema<RateLimitConfig> {
  const d = RATE_LIMIT_DEFAULTS
  return Schema.object({
    enabled: Schema.boolean().default(d.enabled).description('Pause every call to an endpoint that answered 429/503, process-wide, and retry here (false: each adapter retries on its own).'),
    maxRetries: count({ max: 100 }).default(d.maxRetries).description('Retries of one model call after a 429/503; then the run ends `error` (RATE_LIMITED).'),
    maxWaitMs: duration().default(d.maxWaitMs).description('Most ms one model call waits on its endpoint\'s backoff in total; then the run ends `error` (RATE_LIMITED).'),
    maxRetryAfterMs: duration().default(d.maxRetryAfterMs).description('A longer wait announced by the endpoint (`Retry-After`) is clamped to this.'),
    backoffMs: duration({ min: 1 }).default(d.backoffMs).description('Pause after a 429/503 that names no wait; doubles per refusal in a row, up to maxRetryAfterMs.'),
    maxJitterMs: duration().default(d.maxJitterMs).description('Most random ms added to a pause (at most a fifth of it).'),
    recoverAfter: count({ min: 1 }).default(d.recoverAfter).description('Successful calls that raise a lowered endpoint concurrency by one.'),
  }).description('The shared backoff of the model gate after HTTP 429/503 (see the README, "The model gate").')
}

/** The config with its defaults filled in (a programmatic config need not pass through the schema). */
export function rateLimitSettings(config: RateLimitConfig | undefined): RateLimitSettings {
  const settings = { ...RATE_LIMIT_DEFAULTS }
  for (const [key, value] of Object.entries(config ?? {})) {
    if (value !== undefined) (settings as Record<string, unknown>)[key] = value
  }
  return settings
}
