/**
 * The one way this package talks HTTP: `fetch` with our headers, and every answer bounded.
 * Whether an answer is a stream is what we asked for, never what the answer says it is: a request
 * asks for a stream with `Accept: text/event-stream` (the SDKs' streamed sends do), and only an
 * answer to one that comes as text/event-stream is followed as a stream. Every other answer (the
 * card, a send, a poll, a cancel, whatever its content type) must arrive whole within
 * `requestTimeout` and `maxResponseBytes`. A stream must send its headers within `requestTimeout`,
 * then may run as long as it keeps talking: `idleTimeout` between chunks, `maxStreamBytes` in all,
 * no line longer than `MAX_SSE_LINE_BYTES` (one event's data), and its bytes reach the SDK's parser
 * in whole lines (`wholeLines`). A limit aborts the request with a `LimitError` naming the limit.
 */
import { boundedBody } from '@cordis-subagents/shared'
import { wholeLines } from './whole-lines.js'

/** Longest line of a stream: one SSE event's `data:` (the 1.x SDK caps an event at the same 4 MiB). */
export const MAX_SSE_LINE_BYTES = 4 * 1024 * 1024

export interface FetchLimits {
  requestTimeout: number
  idleTimeout: number
  maxResponseBytes: number
  maxStreamBytes: number
  /**
   * The config key both timeouts come from, when one setting bounds the whole fetch (the card's and
   * the JWKS's: `cardTimeout`). A timeout's `LimitError` names it; without it, `requestTimeout` / `idleTimeout`.
   */
  timeoutKey?: string
}

/** A limit of ours ended a request (not the remote, not a caller's abort). */
export class LimitError extends Error {
  constructor(
    message: string,
    /** The timeout that cut it, when it was one: the config key to raise and its value in ms. */
    readonly timeout?: { key: string; ms: number },
  ) {
    super(message)
    this.name = 'LimitError'
  }
}

/** What to do about a timeout of ours that cut a request (` If … only slow, raise \`key\` (now N ms).`), else ''. */
export function raiseAdvice(error: unknown, what: string): string {
  const timeout = error instanceof LimitError ? error.timeout : undefined
  return timeout ? ` If ${what} is only slow, raise \`${timeout.key}\` (now ${timeout.ms} ms).` : ''
}

/** Headers for every request (auth from the environment, trace context per call is added by the caller). */
export type HeaderSource = () => Record<string, string>

/** Picks the dispatcher of a request (undefined: the global one). */
export type DispatcherFor = (input: Parameters<typeof fetch>[0], init: RequestInit | undefined) => object | undefined

export function boundedFetch(limits: FetchLimits, headers: HeaderSource, dispatcherFor?: DispatcherFor): typeof fetch {
  return async (input, init = {}) => {
    const controller = new AbortController()
    const outer = init.signal
    const onOuterAbort = () => controller.abort(outer!.reason)
    if (outer?.aborted) onOuterAbort()
    else outer?.addEventListener('abort', onOuterAbort, { once: true })
    let timer: NodeJS.Timeout | undefined
    const arm = (ms: number, key: string, message: string) => {
      clearTimeout(timer)
      timer = setTimeout(() => controller.abort(new LimitError(`${message} ${ms} ms (${key})`, { key, ms })), ms)
    }
    const requestKey = limits.timeoutKey ?? 'requestTimeout'
    const idleKey = limits.timeoutKey ?? 'idleTimeout'
    const release = () => {
      clearTimeout(timer)
      outer?.removeEventListener('abort', onOuterAbort)
    }
    const merged = new Headers(init.headers)
    for (const [name, value] of Object.entries(headers())) if (!merged.has(name)) merged.set(name, value)
    const askedForStream = isEventStream(merged.get('accept'))
    arm(limits.requestTimeout, requestKey, 'no answer within')
    let response: Response
    try {
      const dispatcher = dispatcherFor?.(input, init)
      // `dispatcher` is undici's extension of RequestInit (Node's fetch is undici).
      const extra = dispatcher ? { dispatcher } as unknown as RequestInit : {}
      response = await fetch(input, { ...init, headers: merged, signal: controller.signal, redirect: 'error', ...extra })
    } catch (error) {
      release()
      throw controller.signal.reason instanceof LimitError ? controller.signal.reason : error
    }
    // An answer labelled text/event-stream to a plain request keeps the plain deadline and cap.
    const streaming = askedForStream && isEventStream(response.headers.get('content-type'))
    const cap = streaming ? limits.maxStreamBytes : limits.maxResponseBytes
    const capName = streaming ? 'maxStreamBytes' : 'maxResponseBytes'
    if (streaming) arm(limits.idleTimeout, idleKey, 'the stream was silent for')
    // A limit (or the caller) ends a pending read itself: fetch does not always error a body whose
    // reader is held when its request is aborted after the headers arrived.
    const stopped = new Promise<never>((_, reject) => {
      if (controller.signal.aborted) reject(controller.signal.reason)
      else controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true })
    })
    stopped.catch(() => {})
    let lineBytes = 0
    const streamLine = (chunk: Uint8Array): LimitError | undefined => {
      const newline = chunk.lastIndexOf(10)
      lineBytes = newline < 0 ? lineBytes + chunk.byteLength : chunk.byteLength - newline - 1
      if (lineBytes > MAX_SSE_LINE_BYTES) return new LimitError(`the remote sent one stream event (line) of more than ${MAX_SSE_LINE_BYTES} bytes`)
      arm(limits.idleTimeout, idleKey, 'the stream was silent for')
      return undefined
    }
    const bounded = boundedBody(response, {
      maxBytes: cap,
      tooLarge: () => new LimitError(`the remote sent more than ${cap} bytes (${capName})`),
      onChunk: streaming ? streamLine : undefined,
      stopped,
      failure: (error) => controller.signal.reason instanceof LimitError ? controller.signal.reason : error,
      abort: (reason) => controller.abort(reason),
      done: release,
    })
    if (!streaming || !bounded.body) return bounded
    const { status, statusText, headers: answered } = bounded
    return new Response(bounded.body.pipeThrough(wholeLines()), { status, statusText, headers: answered })
  }
}

/** A media type (or an Accept list) naming text/event-stream. */
function isEventStream(value: string | null | undefined): boolean {
  return (value ?? '').split(',').some((type) => type.trim().toLowerCase().startsWith('text/event-stream'))
}
