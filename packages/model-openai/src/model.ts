import OpenAI from 'openai'
import type { ChatModel, GenerateRequest, GenerateResponse } from '@cordis-subagents/agent'
import { describeFailure, displayEndpoint, type FailureContext, secretsOf } from './diagnostics.js'
import { fromCompletion, toChatMessages, toChatTools } from './mapping.js'

export const DEFAULT_BASE_URL = 'https://api.openai.com/v1'
export const DEFAULT_MODEL = 'gpt-4.1-mini'
export const DEFAULT_TIMEOUT = 10 * 60 * 1000
export const DEFAULT_MAX_RETRIES = 2
/** Sent as the key when none is configured: the SDK refuses to start without one. Never sent on the wire. */
export const PLACEHOLDER_API_KEY = 'no-key'

export type MaxTokensParam = 'auto' | 'max_tokens' | 'max_completion_tokens'

export interface Logger {
  debug(message: string, ...args: unknown[]): void
  info(message: string, ...args: unknown[]): void
  warn(message: string, ...args: unknown[]): void
  error(message: string, ...args: unknown[]): void
}

export interface OpenAIChatModelOptions {
  /** Root of the API, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`. */
  baseURL: string
  /** Empty: no `Authorization` header is sent (local servers). */
  apiKey?: string
  /** Model id used when a request carries no `modelId`. */
  model: string
  /** Per-attempt timeout in ms. */
  timeout?: number
  maxRetries?: number
  temperature?: number
  headers?: Record<string, string>
  /** Which body field carries `maxTokens`. `auto`: `max_completion_tokens` for api.openai.com, else `max_tokens`. */
  maxTokensParam?: MaxTokensParam
  /** Receives the SDK's own log lines and one warning per failed request. */
  logger?: Logger
}

/**
 * A `ChatModel` over any OpenAI-compatible chat-completions endpoint (non-streaming).
 *
 * Failure contract: `generate` does not throw for request failures (HTTP errors, refused
 * connections, timeouts, unusable bodies). It resolves with `finishReason: 'error'` and a
 * `diagnostic` that names the endpoint, the model and the HTTP status and never contains the
 * API key. It throws only when `request.signal` is aborted (the abort reason, or an
 * `AbortError`), so the agent reports the run as `aborted`.
 */
export class OpenAIChatModel implements ChatModel {
  readonly endpoint: string
  readonly model: string
  readonly maxTokensParam: Exclude<MaxTokensParam, 'auto'>
  private readonly client: OpenAI
  private readonly temperature?: number
  private readonly failure: Omit<FailureContext, 'model'>
  private readonly logger?: Logger

  constructor(options: OpenAIChatModelOptions) {
    const apiKey = options.apiKey ?? ''
    const timeout = options.timeout ?? DEFAULT_TIMEOUT
    const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES
    const defaultHeaders: Record<string, string | null> = {}
    // No key: tell the SDK to drop the Authorization header it would build from the placeholder.
    if (!apiKey) defaultHeaders.Authorization = null
    Object.assign(defaultHeaders, options.headers)
    this.client = new OpenAI({
      baseURL: options.baseURL,
      apiKey: apiKey || PLACEHOLDER_API_KEY,
      timeout,
      maxRetries,
      defaultHeaders,
      ...(options.logger ? { logger: options.logger } : {}),
    })
    this.endpoint = displayEndpoint(options.baseURL)
    this.model = options.model
    this.temperature = options.temperature
    this.logger = options.logger
    this.maxTokensParam = resolveMaxTokensParam(options.maxTokensParam ?? 'auto', options.baseURL)
    this.failure = { endpoint: this.endpoint, timeout, maxRetries, secrets: secretsOf(apiKey, options.headers) }
  }

  async generate(request: GenerateRequest): Promise<GenerateResponse> {
    const { signal } = request
    if (signal.aborted) throw abortError(signal)
    const model = request.modelId || this.model
    const body: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming = {
      model,
      messages: toChatMessages(request.system, request.messages),
    }
    if (request.tools.length) body.tools = toChatTools(request.tools)
    if (this.temperature !== undefined) body.temperature = this.temperature
    if (request.maxTokens !== undefined) body[this.maxTokensParam] = request.maxTokens
    try {
      const completion = await linkedRequest(signal, (child) => this.client.chat.completions.create(body, { signal: child }))
      return fromCompletion(completion)
    } catch (error) {
      if (signal.aborted) throw abortError(signal)
      const diagnostic = describeFailure(error, { ...this.failure, model })
      this.logger?.warn('%s', diagnostic)
      return { text: '', toolCalls: [], finishReason: 'error', diagnostic }
    }
  }
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
export function abortError(signal: AbortSignal): Error {
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
