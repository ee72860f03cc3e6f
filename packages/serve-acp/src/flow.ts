import type { AcpTransport } from './config.js'

/** Bytes written for the client and not yet taken by it past which the server reads no more of its input. */
export const MAX_QUEUED_OUTPUT_BYTES = 1024 * 1024

const NEWLINE = 10

/**
 * The transport handed to the SDK's `ndJsonStream`, with backpressure it lacks: the SDK reads its input as
 * fast as it comes and queues every answer in memory, so a client that writes and never reads grew us without
 * bound. Here the output is accepted at once but counted until the client's stream takes it, and the input
 * is handed on one line (one message) at a time, only while fewer than `maxQueued` bytes wait for the client:
 * past it the server stops reading, the client's writes back up (a pipe fills), and it resumes as the client reads.
 * A write the client's stream refuses (it went away) ends the input with that error, so the connection closes.
 */
export class FlowControl {
  readonly input: ReadableStream<Uint8Array>
  readonly output: WritableStream<Uint8Array>
  private queuedBytes = 0
  private failure: { error: unknown } | undefined
  private waiting: Array<() => void> = []
  private readonly source: ReadableStreamDefaultReader<Uint8Array>
  private inputController!: ReadableStreamDefaultController<Uint8Array>

  constructor(transport: AcpTransport, private readonly maxQueued = MAX_QUEUED_OUTPUT_BYTES) {
    const sink = transport.output.getWriter()
    this.source = transport.input.getReader()
    this.output = new WritableStream<Uint8Array>({
      write: (chunk) => {
        if (this.failure) throw this.failure.error
        const size = chunk.byteLength
        this.queuedBytes += size
        sink.write(chunk).then(() => this.taken(size), (error: unknown) => {
          this.taken(size)
          this.fail(error)
        })
      },
      close: () => sink.close(),
      abort: (reason) => sink.abort(reason),
    })
    let rest: Uint8Array = new Uint8Array(0)
    this.input = new ReadableStream<Uint8Array>({
      start: (controller) => { this.inputController = controller },
      pull: async (controller) => {
        // Each line after a turn of the event loop, so the answers to the lines before it (their way through the SDK is
        // chains of promises) have reached `output` and are counted; then only while the client has taken enough of it.
        for (;;) {
          await new Promise((resolve) => setImmediate(resolve))
          if (this.failure || this.queuedBytes <= this.maxQueued) break
          await new Promise<void>((resolve) => this.waiting.push(resolve))
        }
        while (!rest.byteLength) {
          if (this.failure) return
          const { value, done } = await this.source.read()
          if (this.failure) return
          if (done) {
            controller.close()
            return
          }
          rest = value
        }
        const newline = rest.indexOf(NEWLINE)
        const end = newline < 0 ? rest.byteLength : newline + 1
        controller.enqueue(rest.subarray(0, end))
        rest = rest.subarray(end)
      },
      cancel: (reason) => this.source.cancel(reason),
    }, { highWaterMark: 0 })
  }

  private taken(size: number): void {
    this.queuedBytes -= size
    if (this.queuedBytes <= this.maxQueued) this.wake()
  }

  private fail(error: unknown): void {
    if (this.failure) return
    this.failure = { error }
    try {
      this.inputController.error(error)
    } catch {}
    void this.source.cancel(error).catch(() => {})
    this.wake()
  }

  private wake(): void {
    for (const resolve of this.waiting.splice(0)) resolve()
  }
}

/**
 * At most `max` requests handled at once (a prompt counts for its whole turn): one more is answered at once
 * with `refuse(message)`'s error (`TOO_MANY_REQUESTS`) instead of waiting in memory.
 */
export class RequestCap {
  private running = 0

  constructor(private readonly max: number, private readonly refuse: (message: string) => Error) {}

  /** `handler`, counted while it runs, refused when `max` requests are in flight. */
  capped<C, R>(handler: (context: C) => Promise<R>): (context: C) => Promise<R> {
    return async (context) => {
      if (this.running >= this.max) {
        throw this.refuse(`${this.max} requests of this client are being handled (maxRequestsInFlight); wait for their answers before sending more`)
      }
      this.running++
      try {
        return await handler(context)
      } finally {
        this.running--
      }
    }
  }
}
