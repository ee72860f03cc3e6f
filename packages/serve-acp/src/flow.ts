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
 *
 * `end` finishes the output once what was written is taken. With `keep` (the process's stdin/stdout, shared by
 * every load) the transport's streams are never cancelled or closed: the locks on them are released instead.
 */
export class FlowControl {
  readonly input: ReadableStream<Uint8Array>
  readonly output: WritableStream<Uint8Array>
  /** Chunks written to `output` so far. */
  private accepted = 0
  private queuedBytes = 0
  private failure: { error: unknown } | undefined
  private waiting: Array<() => void> = []
  private readonly writes = new Set<Promise<unknown>>()
  private readonly sink: WritableStreamDefaultWriter<Uint8Array>
  private readonly source: ReadableStreamDefaultReader<Uint8Array>
  private readonly keep: boolean
  private readonly maxQueued: number
  private inputController!: ReadableStreamDefaultController<Uint8Array>
  private ended?: Promise<void>
  private letGo!: () => void
  /** Settles once `end` is done: the transport's output closed (or, with `keep`, both streams let go of). */
  readonly released = new Promise<void>((resolve) => { this.letGo = resolve })

  constructor(transport: AcpTransport, options: { keep?: boolean; maxQueued?: number } = {}) {
    this.keep = options.keep ?? false
    this.maxQueued = options.maxQueued ?? MAX_QUEUED_OUTPUT_BYTES
    const sink = this.sink = transport.output.getWriter()
    this.source = transport.input.getReader()
    this.output = new WritableStream<Uint8Array>({
      write: (chunk) => {
        if (this.failure) throw this.failure.error
        if (this.ended) throw new Error('the ACP output is closed')
        const size = chunk.byteLength
        this.accepted++
        this.queuedBytes += size
        const write = sink.write(chunk).then(() => this.taken(size), (error: unknown) => {
          this.taken(size)
          this.fail(error)
        })
        this.writes.add(write)
        void write.finally(() => this.writes.delete(write))
      },
      close: () => this.end(Infinity),
      abort: (reason) => this.keep ? this.end(performance.now()) : sink.abort(reason),
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
      cancel: (reason) => this.letGoOfInput(reason),
    }, { highWaterMark: 0 })
  }

  /**
   * Resolves once a turn of the event loop passed with nothing written (or at `deadline`, performance.now() ms): an
   * answer's way from its handler to `output` is chains of promises through the SDK, so by then every answer whose
   * handler had returned is written.
   */
  async quiet(deadline: number): Promise<void> {
    for (let seen = -1; seen !== this.accepted && performance.now() < deadline;) {
      seen = this.accepted
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /**
   * Ends the output after what was written to it: closes the transport's output, so the client reads the end of the
   * stream after its last answers; waits until the client's stream took them, at most until `deadline` (performance.now()
   * ms; a client that reads no more gets them and the end whenever it reads again). With `keep` it waits the same way,
   * then releases the output and the input instead (nothing is closed or cancelled). Idempotent.
   */
  end(deadline: number): Promise<void> {
    return this.ended ??= (async () => {
      if (!this.keep) {
        await until(this.sink.close().catch(() => {}), deadline)
      } else {
        await until(Promise.allSettled([...this.writes]), deadline)
        this.sink.releaseLock()
        await this.letGoOfInput(undefined)
      }
      this.letGo()
    })()
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
    void this.letGoOfInput(error)
    this.wake()
  }

  /** Cancels the transport's input; with `keep` releases it (a read in flight is given up, what it did not take stays queued). */
  private async letGoOfInput(reason: unknown): Promise<void> {
    if (!this.keep) return this.source.cancel(reason).catch(() => {})
    try {
      this.source.releaseLock()
    } catch {}
  }

  private wake(): void {
    for (const resolve of this.waiting.splice(0)) resolve()
  }
}

/** `work`'s value, or undefined once `deadline` (performance.now() ms) passed first. */
export async function until<T>(work: Promise<T>, deadline: number): Promise<T | undefined> {
  if (deadline === Infinity) return work
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - performance.now()))
  })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * At most `max` requests handled at once (a prompt counts for its whole turn): one more is answered at once
 * with `refuse(message)`'s error (`TOO_MANY_REQUESTS`) instead of waiting in memory.
 */
export class RequestCap {
  private running = 0
  private idlers: Array<() => void> = []

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
        if (!this.running) for (const resolve of this.idlers.splice(0)) resolve()
      }
    }
  }

  /** Resolves once no request is being handled. */
  idle(): Promise<void> {
    return this.running ? new Promise((resolve) => this.idlers.push(resolve)) : Promise.resolve()
  }
}
