import { countProblem, durationProblem } from '@cordis-subagents/shared'
import OpenAI, { APIError } from 'openai'
import { type ChatModel, type GenerateRequest, type GenerateResponse, RateLimitedError } from '@cordis-subagents/agent'
import { describeFailure, displayEndpoint, type FailureContext, ModelOpenAIError, secretsOf } from './diagnostics.js'
import { type AttemptCount, countedFetch, guardedFetch } from './guarded-fetch.js'
import { headersProblem } from './header-values.js'
import { boundedRetryWaits, gateRetries, isRateRefusal, MAX_SDK_RETRY_WAIT_MS, retryAfterMs } from './retry-after.js'
import { type Logger, redactingLogger } from './redacting-logger.js'
import { JsonDepthError, readCappedJson } from './capped-json.js'
import { fromCompletion, MalformedResponseError, RESPONSE_LIMITS, toChatMessages, toChatTools, truncate } from './mapping.js'

export const DEFAULT_BASE_URL = 'https://api.openai.com/v1'
export const DEFAULT_MODEL = 'gpt-4.1-mini'
export const DEFAULT_TIMEOUT = 10 * 60 * 1000
export const DEFAULT_MAX_RETRIES = 2
/** Largest response body accepted (16 MiB, decoded): far above any real completion, far below a runaway. */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
/** Sent as the key when none is configured: the SDK refuses to start without one. Never sent on the wire. */
const PLACEHOLDER_API_KEY = 'no-key'

export type MaxTokensParam = 'auto' | 'max_tokens' | 'max_completion_tokens'

export interface OpenAIChatModelOptions {
  /** Root of the API, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`. */
  baseURL: string
  /** Empty: no `Authorization` header is sent (local servers). */
  apiKey?: string
  /** Model id used when a request carries no `modelId`. */
  model: string
  /** Deadline of one HTTP attempt in ms, response body included. */
  timeout?: number
  /** Largest response body accepted, in bytes (after decompression). */
  maxResponseBytes?: number
  maxRetries?: number
  temperature?: number
  headers?: Record<string, string>
  /** Which body field carries `maxTokens`. `auto`: `max_completion_tokens` for api.openai.com, else `max_tokens`. */
  maxTokensParam?: MaxTokensParam
  /** The model accepts images: tool results' images go out as `image_url` parts (see `toChatMessages`). */
  images?: boolean
  /** Receives the SDK's own log lines (redacted) and one warning per failed request. Default: the console. */
  logger?: Logger
  /** The fetch the attempts go through (tests); wrapped with the timeout and size guards. */
  fetch?: typeof fetch
  /** The endpoint supports structured outputs: `request.output` goes out as `response_format` json_schema. Default false. */
  structuredOutput?: boolean
}

/**
 * A `ChatModel` over any OpenAI-compatible chat-completions endpoint (non-streaming).
 *
 * Failure contract: `generate` does not throw for request failures (HTTP errors, refused
 * connections, timeouts, unusable bodies). It resolves with `finishReason: 'error'` and a
 * `diagnostic` that names the endpoint, the model and the HTTP status and never contains the
 * API key. It throws only when `request.signal` is aborted (the abort reason, or an
 * `AbortError`), so the agent reports the run as `aborted`, and, when the runtime's model gate
 * retries rate limits (`request.rateLimits: 'gate'`), on HTTP 429 or 503: then the SDK does not
 * retry it, and `generate` throws `RateLimitedError` (`RATE_LIMITED`) with `rateLimitKey(model)`
 * as its endpoint and the wait the server announced (`retry-after-ms`, `Retry-After`).
 */
export class OpenAIChatModel implements ChatModel {
  readonly endpoint: string
  readonly model: string
  readonly maxTokensParam: Exclude<MaxTokensParam, 'auto'>
  /** Whether `request.output` is honoured (the agent offers a `final_answer` tool otherwise). */
  readonly structuredOutput: boolean
  /** The endpoint's host and port, for traces (`server.address`, `server.port`). */
  readonly server?: { readonly address: string; readonly port?: number }
  /** Each call's client is made from this one, with a fetch that counts the call's attempts (`withOptions`). */
  private readonly client: OpenAI
  /** The attempts' fetch: the SDK's own, and a gated call's, where a 429 or 503 comes straight back (the model gate retries it). */
  private readonly fetches: { readonly own: typeof fetch; readonly gated: typeof fetch }
  private readonly temperature?: number
  private readonly images: boolean
  private readonly failure: Omit<FailureContext, 'model' | 'attempts'>
  private readonly logger?: Logger

  constructor(options: OpenAIChatModelOptions) {
    const apiKey = options.apiKey ?? ''
    const timeout = options.timeout ?? DEFAULT_TIMEOUT
    const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES
    const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
    const { root, query } = splitBaseURL(checkBaseURL(options.baseURL))
    const problem = durationProblem('timeout', timeout, { min: 1 })
      ?? countProblem('maxResponseBytes', maxResponseBytes, { min: 1 })
      ?? countProblem('maxRetries', maxRetries, { max: 100 })
      ?? temperatureProblem(options.temperature)
    if (problem) throw new ModelOpenAIError('INVALID_CONFIG', `model-openai: ${problem}`)
    const headerProblem = headersProblem(apiKey, options.headers, { key: 'options.apiKey', headers: 'options.headers' })
    if (headerProblem) throw new ModelOpenAIError('INVALID_CONFIG', `model-openai: ${headerProblem}`)
    const secrets = secretsOf(apiKey, options.headers, options.baseURL)
    const fetch = guardedFetch({ timeout, maxResponseBytes }, options.fetch)
    const maxWait = Math.min(timeout, MAX_SDK_RETRY_WAIT_MS)
    this.fetches = { own: boundedRetryWaits(fetch, maxWait), gated: boundedRetryWaits(gateRetries(fetch), maxWait) }
    const defaultHeaders: Record<string, string | null> = {}
    // No key: tell the SDK to drop the Authorization header it would build from the placeholder.
    if (!apiKey) defaultHeaders.Authorization = null
    Object.assign(defaultHeaders, options.headers)
    this.client = new OpenAI({
      // The SDK appends the path to baseURL as text, so a query must travel as defaultQuery.
      baseURL: root,
      defaultQuery: query,
      apiKey: apiKey || PLACEHOLDER_API_KEY,
      timeout,
      maxRetries,
      defaultHeaders,
      fetch: this.fetches.own,
      // The SDK logs request URLs and, at OPENAI_LOG=debug, headers and bodies: every line is redacted.
      logger: redactingLogger(options.logger ?? console, secrets),
    })
    this.endpoint = displayEndpoint(options.baseURL)
    this.server = serverOf(root)
    this.model = options.model
    this.temperature = options.temperature
    this.images = options.images === true
    this.structuredOutput = options.structuredOutput === true
    this.logger = options.logger
    this.maxTokensParam = resolveMaxTokensParam(options.maxTokensParam ?? 'auto', options.baseURL)
    this.failure = { endpoint: this.endpoint, timeout, secrets }
  }

  /** The model gate's key of a call: the endpoint (no credentials, no query) and the model id. */
  rateLimitKey(modelId: string | undefined): string {
    return `${this.endpoint} (model "${modelId || this.model}")`
  }

  async generate(request: GenerateRequest): Promise<GenerateResponse> {
    const { signal } = request
    if (signal.aborted) throw abortError(signal)
    const model = request.modelId || this.model
    const body: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming = {
      model,
      messages: toChatMessages(request.system, request.messages, { images: this.images }),
    }
    if (request.tools.length) body.tools = toChatTools(request.tools)
    if (this.temperature !== undefined) body.temperature = this.temperature
    if (request.maxTokens !== undefined) body[this.maxTokensParam] = request.maxTokens
    if (request.output && this.structuredOutput) {
      body.response_format = { type: 'json_schema', json_schema: { name: request.output.name, schema: request.output.schema } }
    }
    const gated = request.rateLimits === 'gate'
    // A client of this call's own (some 30 µs) whose fetch counts the attempts the SDK makes, for the diagnostic.
    const attempts: AttemptCount = { made: 0 }
    const client = this.client.withOptions({ fetch: countedFetch(gated ? this.fetches.gated : this.fetches.own, attempts) })
    try {
      return await linkedRequest(signal, async (child) => {
        // The raw response, read through the array cap: the SDK's own parse would build every element.
        const response = await client.chat.completions.create(body, { signal: child }).asResponse()
        return completionFrom(response, request.maxToolCalls)
      })
    } catch (error) {
      if (signal.aborted) throw abortError(signal)
      // A 429 for an exhausted quota is not a rate: waiting does not help, so it stays a diagnostic.
      if (gated && error instanceof APIError && typeof error.status === 'number' && isRateRefusal(error.status) && error.code !== 'insufficient_quota') {
        const message = describeFailure(error, { ...this.failure, attempts: attempts.made, model })
        throw new RateLimitedError('RATE_LIMITED', message, { endpoint: this.rateLimitKey(model), status: error.status, retryAfterMs: retryAfterMs(error.headers) })
      }
      const diagnostic = describeFailure(error, { ...this.failure, attempts: attempts.made, model })
      this.logger?.warn('%s', diagnostic)
      return { text: '', toolCalls: [], finishReason: 'error', diagnostic }
    }
  }
}

/** `server.address` / `server.port` of a base URL: the host (no brackets) and the port, explicit or the scheme's. */
function serverOf(baseURL: string): { address: string; port?: number } | undefined {
  try {
    const url = new URL(baseURL)
    const address = url.hostname.replace(/^\[(.*)\]$/, '$1')
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : url.protocol === 'http:' ? 80 : undefined
    return address ? { address, ...port === undefined ? {} : { port } } : undefined
  } catch {
    return undefined
  }
}

/**
 * A successful HTTP response → our response: the body is read with every array capped at the
 * normaliser's ceiling (`RESPONSE_LIMITS`), so no per-response count costs more than the cap.
 */
async function completionFrom(response: Response, maxToolCalls: number | undefined): Promise<GenerateResponse> {
  let read: Awaited<ReturnType<typeof readCappedJson>>
  try {
    read = await readCappedJson(response.body, RESPONSE_LIMITS.items)
  } catch (error) {
    if (error instanceof SyntaxError || error instanceof JsonDepthError) {
      throw new MalformedResponseError(`the body is not usable JSON (${truncate(error.message, 120)})`)
    }
    throw error
  }
  const completion = read.value as OpenAI.Chat.ChatCompletion
  return fromCompletion(completion, { maxToolCalls, droppedToolCalls: read.cut.get('tool_calls') ?? 0 })
}

/** The sampling temperature's range (OpenAI's; most compatible servers take the same). */
export const TEMPERATURE_RANGE = { min: 0, max: 2 } as const

/** Undefined when `temperature` is unset or a finite number in range; else a sentence naming it. */
export function temperatureProblem(temperature: unknown): string | undefined {
  if (temperature === undefined) return undefined
  if (typeof temperature === 'number' && Number.isFinite(temperature) && temperature >= TEMPERATURE_RANGE.min && temperature <= TEMPERATURE_RANGE.max) {
    return undefined
  }
  const shown = typeof temperature === 'number' ? String(temperature) : JSON.stringify(temperature) ?? typeof temperature
  return `temperature must be a number from ${TEMPERATURE_RANGE.min} to ${TEMPERATURE_RANGE.max}, got ${shown}.`
}

/**
 * A checked baseURL → the root the SDK appends paths to, and its query as the SDK's
 * `defaultQuery` (sent on every request, after the path: `/v1/chat/completions?api-version=…`).
 */
function splitBaseURL(url: URL): { root: string; query?: Record<string, string> } {
  if (!url.search) return { root: url.toString() }
  const query: Record<string, string> = {}
  for (const [name, value] of url.searchParams) query[name] = value
  const root = new URL(url)
  root.search = ''
  return { root: root.toString(), query }
}

/**
 * Throws `INVALID_CONFIG` for a baseURL that is not http(s), carries user info (`user:pass@`), a
 * fragment (`#…`, never sent to a server) or the same query parameter twice.
 */
export function checkBaseURL(baseURL: string): URL {
  let url: URL | undefined
  try {
    url = new URL(baseURL)
  } catch {}
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ModelOpenAIError('INVALID_CONFIG', `model-openai: config "baseURL" must be an http(s) URL such as https://api.openai.com/v1, got ${JSON.stringify(url ? displayEndpoint(baseURL) : baseURL.slice(0, 100))}.`)
  }
  if (url.username || url.password) {
    throw new ModelOpenAIError('INVALID_CONFIG', `model-openai: config "baseURL" must not contain user info ("user:password@"), got ${JSON.stringify(displayEndpoint(baseURL))} with credentials removed. Put the key in "apiKey", or a credential in "headers".`)
  }
  if (url.hash) {
    throw new ModelOpenAIError('INVALID_CONFIG', `model-openai: config "baseURL" must not contain a fragment ("#…"; it is never sent to the server), got ${JSON.stringify(displayEndpoint(baseURL))} with the fragment and query removed. Remove it.`)
  }
  const names = new Set<string>()
  for (const name of url.searchParams.keys()) {
    if (names.has(name)) {
      throw new ModelOpenAIError('INVALID_CONFIG', `model-openai: config "baseURL" has the query parameter ${JSON.stringify(name.slice(0, 64))} twice; give it once (a credential belongs in "apiKey" or "headers").`)
    }
    names.add(name)
  }
  return url
}

function resolveMaxTokensParam(param: MaxTokensParam, baseURL: string): Exclude<MaxTokensParam, 'auto'> {
  if (param !== 'auto') return param
  try {
    return new URL(baseURL).hostname === 'api.openai.com' ? 'max_completion_tokens' : 'max_tokens'
  } catch {
    return 'max_tokens'
  }
}

/** The error an aborted `generate` throws: the signal's reason when it is an Error, else an `AbortError`. */
function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason
  if (reason instanceof Error) return reason
  return new DOMException(reason === undefined ? 'The operation was aborted.' : String(reason), 'AbortError')
}

/**
 * Runs `start` with a per-request child signal linked to `signal`, and rejects as soon as `signal`
 * aborts. The child signal keeps the SDK's own (never removed) abort listener off the caller's
 * signal, which lives for a whole agent run; the early rejection makes abort immediate even while
 * the SDK sleeps between retries (it does not watch the signal there).
 */
function linkedRequest<T>(signal: AbortSignal, start: (child: AbortSignal) => Promise<T>): Promise<T> {
  const child = new AbortController()
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      child.abort(signal.reason)
      reject(abortError(signal))
    }
    signal.addEventListener('abort', onAbort, { once: true })
    let promise: Promise<T>
    try {
      promise = start(child.signal)
    } catch (error) {
      promise = Promise.reject(error)
    }
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}
