import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai'
import { bearerToken, capForRedaction, CodedError, isCredentialName, redact } from '@cordis-subagents/shared'
import { ResponseTimeoutError, ResponseTooLargeError } from './guarded-fetch.js'
import { MalformedResponseError, truncate } from './mapping.js'
import { sentHeaderValue } from './header-values.js'

/** Stable codes for the errors this package throws (configuration only; request failures are diagnostics). */
export type ModelOpenAIErrorCode = 'INVALID_CONFIG'

export class ModelOpenAIError extends CodedError<ModelOpenAIErrorCode> {
  override name = 'ModelOpenAIError'
}

export interface FailureContext {
  /** The endpoint as shown to users (no credentials, no query). */
  endpoint: string
  model: string
  timeout: number
  /** The HTTP attempts the request made (the SDK's first and its retries); more than one is said ("after 3 attempts"). */
  attempts: number
  /** Values that must never appear in a diagnostic (the API key, secret header values). */
  secrets: readonly string[]
}

/** Collects the secrets a diagnostic must never contain: the key, secret-named header values, baseURL query values. */
export function secretsOf(apiKey: string, headers: Record<string, string> | undefined, baseURL?: string): string[] {
  const secrets: string[] = []
  // Fetch sends a header value without its leading and trailing HTTP whitespace (a key read from a file often ends in a
  // newline): what a server can echo back is the trimmed value, so that is a secret too.
  const keep = (value: string) => {
    secrets.push(value)
    const sent = sentHeaderValue(value)
    if (sent && sent !== value) secrets.push(sent)
  }
  if (apiKey) keep(apiKey)
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (isCredentialName(name) && value) {
      keep(value)
      const bearer = bearerToken(sentHeaderValue(value), value.length)
      if (bearer) secrets.push(bearer)
    }
  }
  if (baseURL) {
    try {
      for (const value of new URL(baseURL).searchParams.values()) if (value) secrets.push(value)
    } catch {}
  }
  return secrets
}

/** A URL as shown in diagnostics and logs: no user info, no query string, no fragment. */
export function displayEndpoint(baseURL: string): string {
  try {
    const url = new URL(baseURL)
    url.username = ''
    url.password = ''
    url.search = ''
    url.hash = ''
    return url.toString().replace(/\/$/, '')
  } catch {
    return '(invalid baseURL)'
  }
}

/** Turns any failure of a chat-completions request into a one-paragraph, secret-free diagnostic. */
export function describeFailure(error: unknown, ctx: FailureContext): string {
  const where = `OpenAI-compatible endpoint ${ctx.endpoint} (model "${ctx.model}")`
  // Counted, not assumed: the SDK retries only what its rule (x-should-retry, 408/409/429/5xx, connection) allows.
  const attempts = ctx.attempts > 1 ? ` after ${ctx.attempts} attempts` : ''
  let text: string
  const guard = findGuardError(error)
  if (guard instanceof ResponseTooLargeError) {
    text = `${where}: the response is larger than ${guard.limit} bytes (maxResponseBytes); it was cut off and discarded. Ask for a shorter answer (maxTokens) or raise "maxResponseBytes".`
  } else if (guard instanceof ResponseTimeoutError) {
    text = `${where}: no complete response within ${ctx.timeout} ms (timeout, ${guard.phase === 'body' ? 'the body was still arriving' : 'no response headers'}). Check that the server is up, or raise "timeout".`
  } else if (error instanceof APIConnectionTimeoutError) {
    text = `${where}: no response within ${ctx.timeout} ms${attempts} (timeout). Check that the server is up, or raise "timeout".`
  } else if (error instanceof APIConnectionError) {
    const code = causeCode(error)
    text = `${where}: connection failed${code ? ` (${code})` : ''}${attempts}. Check that the server is running and that "baseURL" is right.`
  } else if (error instanceof APIError && typeof error.status === 'number') {
    text = `${where} answered HTTP ${error.status}${attempts}: ${serverMessage(error, ctx.secrets)}${hintFor(error.status)}`
  } else if (error instanceof MalformedResponseError) {
    text = `${where}: unusable response: ${error.message}. Check "baseURL" (it usually ends in /v1).`
  } else {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
    text = `${where}: request failed: ${truncate(redact(capForRedaction(message, 4096), ctx.secrets), 300)}`
  }
  return truncate(redact(text, ctx.secrets), 2000)
}

function serverMessage(error: APIError, secrets: readonly string[]): string {
  const body = error.error as { message?: unknown } | undefined
  const raw = body && typeof body === 'object' && typeof body.message === 'string' ? body.message
    : typeof error.error === 'string' ? error.error
    : body ? JSON.stringify(body) ?? 'no error body' : 'no error body'
  // Redact before truncating: a cut could leave the head of a secret that no longer matches.
  return truncate(redact(capForRedaction(String(raw).trim(), 4096), secrets) || 'no error message', 300)
}

/** Our own fetch-guard error, as thrown or along the cause chain of an SDK error. */
function findGuardError(error: unknown): ResponseTimeoutError | ResponseTooLargeError | undefined {
  let current: unknown = error
  for (let depth = 0; depth < 8 && current && typeof current === 'object'; depth++) {
    if (current instanceof ResponseTimeoutError || current instanceof ResponseTooLargeError) return current
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

function hintFor(status: number): string {
  if (status === 400) return '. The server rejected the request.'
  if (status === 401) return '. Check "apiKey" (or OPENAI_API_KEY).'
  if (status === 403) return '. The key has no access to this model or endpoint.'
  if (status === 404) return '. Check "model" and that "baseURL" points at the API root (usually ending in /v1).'
  if (status === 429) return '. Rate limited or out of quota; retry later or raise "maxRetries".'
  if (status >= 500) return '. The server failed; retry later or raise "maxRetries".'
  return '.'
}

/** The first `code` (ECONNREFUSED, ENOTFOUND, UND_ERR_…) along an error's cause chain. */
function causeCode(error: unknown): string | undefined {
  let current: unknown = error
  for (let depth = 0; depth < 8 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && code) return code
    const errors = (current as { errors?: unknown }).errors
    if (Array.isArray(errors) && errors.length) {
      const inner = causeCode(errors[0])
      if (inner) return inner
    }
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}
