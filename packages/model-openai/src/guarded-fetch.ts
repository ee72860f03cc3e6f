// A `fetch` for the OpenAI SDK that bounds one whole HTTP attempt: the deadline covers the
// response body as well as the headers (the SDK's own timeout stops at the headers), and the
// body is counted as it streams in and cut off past a byte cap (after decompression).
import { boundedBody } from '@cordis-subagents/shared'

/** The attempt did not complete (headers and body) within `timeout` ms. */
export class ResponseTimeoutError extends Error {
  override name = 'ResponseTimeoutError'
  readonly code = 'RESPONSE_TIMEOUT'
  constructor(readonly timeout: number, readonly phase: 'headers' | 'body') {
    // "timed out" in the message lets the SDK classify a headers-phase timeout as a timeout (and retry it).
    super(`request timed out after ${timeout} ms (${phase === 'body' ? 'while reading the response body' : 'waiting for the response'})`)
  }
}

/** The response body exceeded `limit` bytes. */
export class ResponseTooLargeError extends Error {
  override name = 'ResponseTooLargeError'
  readonly code = 'RESPONSE_TOO_LARGE'
  constructor(readonly limit: number) {
    super(`response body exceeds maxResponseBytes (${limit} bytes)`)
  }
}

export interface AttemptLimits {
  /** Deadline of one attempt in ms, from the request until the last body byte. */
  timeout: number
  /** Largest response body accepted, in bytes (decoded). */
  maxResponseBytes: number
}

export function guardedFetch(limits: AttemptLimits, inner: typeof fetch = globalThis.fetch): typeof fetch {
  return async (input, init) => {
    const controller = new AbortController()
    const outer = init?.signal ?? undefined
    const onOuterAbort = () => controller.abort(outer!.reason)
    if (outer?.aborted) controller.abort(outer.reason)
    else outer?.addEventListener('abort', onOuterAbort, { once: true })
    let phase: 'headers' | 'body' = 'headers'
    let timedOut: ResponseTimeoutError | undefined
    const timer = setTimeout(() => {
      timedOut = new ResponseTimeoutError(limits.timeout, phase)
      controller.abort(timedOut)
    }, limits.timeout)
    const finish = () => {
      clearTimeout(timer)
      outer?.removeEventListener('abort', onOuterAbort)
    }

    let response: Response
    try {
      response = await inner(input, { ...init, signal: controller.signal })
    } catch (error) {
      finish()
      throw timedOut ?? error
    }
    phase = 'body'
    return boundedBody(response, {
      maxBytes: limits.maxResponseBytes,
      tooLarge: () => new ResponseTooLargeError(limits.maxResponseBytes),
      failure: (error) => timedOut ?? error,
      abort: (reason) => controller.abort(reason),
      done: finish,
    })
  }
}

/** How many HTTP attempts one request has made so far: the SDK's first and each of its retries. */
export interface AttemptCount {
  made: number
}

/** A fetch that counts each call in `count`: the SDK calls its fetch once per attempt. */
export function countedFetch(inner: typeof fetch, count: AttemptCount): typeof fetch {
  return (input, init) => {
    count.made++
    return inner(input, init)
  }
}
