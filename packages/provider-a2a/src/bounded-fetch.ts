/**
 * The one way this package talks HTTP: `fetch` with our headers, and every answer bounded.
 * A plain answer (the card, a send, a poll, a cancel) must arrive whole within `requestTimeout`
 * and `maxResponseBytes`; a stream (text/event-stream) must send its headers within
 * `requestTimeout`, then may run as long as it keeps talking: `idleTimeout` between chunks,
 * `maxStreamBytes` in all, and no line longer than `MAX_SSE_LINE_BYTES` (one event's data; the 0.3
 * SDK's SSE parser keeps a line whole and rescans it per chunk). A limit aborts the request with a
 * `LimitError` naming the limit.
 */

/** Longest line of a stream: one SSE event's `data:` (the 1.x SDK caps an event at the same 4 MiB). */
export const MAX_SSE_LINE_BYTES = 4 * 1024 * 1024

export interface FetchLimits {
  requestTimeout: number
  idleTimeout: number
  maxResponseBytes: number
  maxStreamBytes: number
}

/** A limit of ours ended a request (not the remote, not a caller's abort). */
export class LimitError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'LimitError'
  }
}

/** Headers for every request (auth from the environment, trace context per call is added by the caller). */
export type HeaderSource = () => Record<string, string>

export function boundedFetch(limits: FetchLimits, headers: HeaderSource): typeof fetch {
  return async (input, init = {}) => {
    const controller = new AbortController()
    const outer = init.signal
    const onOuterAbort = () => controller.abort(outer!.reason)
    if (outer?.aborted) onOuterAbort()
    else outer?.addEventListener('abort', onOuterAbort, { once: true })
    let timer: NodeJS.Timeout | undefined
    const arm = (ms: number, message: string) => {
      clearTimeout(timer)
      timer = setTimeout(() => controller.abort(new LimitError(message)), ms)
    }
    const release = () => {
      clearTimeout(timer)
      outer?.removeEventListener('abort', onOuterAbort)
    }
    const merged = new Headers(init.headers)
    for (const [name, value] of Object.entries(headers())) if (!merged.has(name)) merged.set(name, value)
    arm(limits.requestTimeout, `no answer within ${limits.requestTimeout} ms (requestTimeout)`)
    let response: Response
    try {
      response = await fetch(input, { ...init, headers: merged, signal: controller.signal, redirect: 'error' })
    } catch (error) {
      release()
      throw controller.signal.reason instanceof LimitError ? controller.signal.reason : error
    }
    if (!response.body) {
      release()
      return response
    }
    const streaming = (response.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream')
    const cap = streaming ? limits.maxStreamBytes : limits.maxResponseBytes
    const capName = streaming ? 'maxStreamBytes' : 'maxResponseBytes'
    if (streaming) arm(limits.idleTimeout, `the stream was silent for ${limits.idleTimeout} ms (idleTimeout)`)
    const reader = response.body.getReader()
    // A limit (or the caller) ends a pending read itself: fetch does not always error a body whose
    // reader is held when its request is aborted after the headers arrived.
    const aborted = new Promise<never>((_, reject) => {
      if (controller.signal.aborted) reject(controller.signal.reason)
      else controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true })
    })
    aborted.catch(() => {})
    let bytes = 0
    let lineBytes = 0
    const body = new ReadableStream<Uint8Array>({
      async pull(sink) {
        let chunk: Awaited<ReturnType<typeof reader.read>>
        try {
          chunk = await Promise.race([reader.read(), aborted])
        } catch (error) {
          release()
          reader.cancel(error).catch(() => {})
          sink.error(controller.signal.reason instanceof LimitError ? controller.signal.reason : error)
          return
        }
        if (chunk.done) {
          release()
          sink.close()
          return
        }
        bytes += chunk.value.byteLength
        if (bytes > cap) {
          const limit = new LimitError(`the remote sent more than ${cap} bytes (${capName})`)
          controller.abort(limit)
          release()
          sink.error(limit)
          return
        }
        if (streaming) {
          const newline = chunk.value.lastIndexOf(10)
          lineBytes = newline < 0 ? lineBytes + chunk.value.byteLength : chunk.value.byteLength - newline - 1
          if (lineBytes > MAX_SSE_LINE_BYTES) {
            const limit = new LimitError(`the remote sent one stream event (line) of more than ${MAX_SSE_LINE_BYTES} bytes`)
            controller.abort(limit)
            release()
            sink.error(limit)
            return
          }
          arm(limits.idleTimeout, `the stream was silent for ${limits.idleTimeout} ms (idleTimeout)`)
        }
        sink.enqueue(chunk.value)
      },
      cancel(reason) {
        release()
        controller.abort(reason)
        return reader.cancel(reason).catch(() => {})
      },
    })
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
  }
}
