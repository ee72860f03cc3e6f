// A fetch response whose body is counted as it streams in and ended past a byte cap: the one rule
// under every bounded fetch of ours (provider-a2a's, model-openai's), whatever else each bounds.

export interface BodyBounds {
  /** Most body bytes passed on; a body (or a declared Content-Length) above it fails with `tooLarge()`. */
  maxBytes: number
  tooLarge: () => Error
  /** Checks each chunk once counted (a line cap, an idle timer to re-arm); an Error it returns ends the body. */
  onChunk?: (chunk: Uint8Array) => Error | undefined
  /** Settles (rejects) when the request is stopped, so a pending read ends at once. */
  stopped?: Promise<never>
  /** The error the body fails with when a read throws (a limit's own error rather than the abort it caused). */
  failure?: (error: unknown) => unknown
  /** Stops the request: with the error when a bound ends the body, with the reason when the reader cancels. */
  abort: (reason: unknown) => void
  /** Called when the body is done with (ended, failed or cancelled): timers and listeners go. May run more than once. */
  done: () => void
}

/** Statuses whose responses cannot carry a body (the Response constructor rejects one). */
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304])

/** `response` with its body bounded by `bounds`; a response without a body comes back as it is (after `done()`). */
export function boundedBody(response: Response, bounds: BodyBounds): Response {
  if (!response.body || NULL_BODY_STATUS.has(response.status)) {
    bounds.done()
    return response
  }
  const { maxBytes, tooLarge, onChunk, stopped, failure = (error) => error, abort, done } = bounds
  const declared = Number(response.headers.get('content-length') ?? Number.NaN)
  const reader = response.body.getReader()
  let received = 0
  const fail = (body: ReadableStreamDefaultController<Uint8Array>, error: unknown) => {
    done()
    abort(error)
    reader.cancel(error).catch(() => {})
    body.error(error)
  }
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (Number.isFinite(declared) && declared > maxBytes) fail(controller, tooLarge())
    },
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>
      try {
        chunk = await (stopped ? Promise.race([reader.read(), stopped]) : reader.read())
      } catch (error) {
        done()
        reader.cancel(error).catch(() => {})
        controller.error(failure(error))
        return
      }
      if (chunk.done) {
        done()
        controller.close()
        return
      }
      received += chunk.value.byteLength
      const bound = received > maxBytes ? tooLarge() : onChunk?.(chunk.value)
      if (bound) return fail(controller, bound)
      controller.enqueue(chunk.value)
    },
    cancel(reason) {
      done()
      abort(reason)
      return reader.cancel(reason).catch(() => {})
    },
  })
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
}
