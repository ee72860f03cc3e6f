import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads'
import { Field, MAILBOX, MAILBOX_BYTES, MAILBOX_HEADER, Slot } from './mailbox.js'

// The main thread's side of a writer thread (postgres-writer.ts, sqlite-writer.ts). Batches go
// through a mailbox in shared memory (mailbox.ts), not postMessage: the main thread writes a batch's
// encoded writes there (the texts write-ops.ts made once; the thread builds the statements), bumps
// the request counter and wakes the thread with Atomics.notify; the thread
// runs them, writes each statement's affected rows (or the error) back and bumps the done counter,
// which the main thread awaits with Atomics.waitAsync. No structured clone and no message event on
// the hot path. One batch is in the mailbox at a time (the group commit writes one at a time; a
// second one waits here); a batch larger than the mailbox goes by a message port instead. The host
// is kept alive only while a batch is awaited. close() closes the thread's connection, then
// terminates it (forced after 6 s).

/** `Atomics.waitAsync` (Node ≥ 16; ES2024, newer than this package's `lib`). */
const waitAsync = (Atomics as unknown as {
  waitAsync(array: Int32Array, index: number, value: number): { async: false; value: string } | { async: true; value: Promise<string> }
}).waitAsync

interface Waiter {
  resolve(results: number[]): void
  reject(error: unknown): void
}

/** What a batch is: groups of writes, a ping (the thread started and its connection open), or the close. */
type Kind = typeof Slot.Batch | typeof Slot.Ping | typeof Slot.Close

export class WriterThread {
  private readonly worker: Worker
  private readonly head: Int32Array
  private readonly bytes: Buffer
  private readonly ints: Int32Array
  private readonly port: MessagePort
  private seq = 0
  /** The batch in the mailbox now, and those waiting for it to be free. */
  private current: Waiter | undefined
  private readonly queued: Array<{ kind: Kind; groups: string[][]; waiter: Waiter }> = []
  private closing: Promise<void> | undefined
  private exited = false
  private closed = false

  /**
   * `source`: the worker's CommonJS text (it starts with `MAILBOX`'s helpers); `label`: the store's name
   * in errors ("PostgreSQL", "SQLite"); `onExit`: runs when the thread has ended, however it ended.
   */
  constructor(source: string, workerData: object, private readonly label: string, onExit?: () => void) {
    const box = new SharedArrayBuffer(MAILBOX_HEADER + MAILBOX_BYTES)
    this.head = new Int32Array(box, 0, MAILBOX_HEADER / 4)
    this.bytes = Buffer.from(box, MAILBOX_HEADER)
    this.ints = new Int32Array(box, MAILBOX_HEADER)
    const { port1, port2 } = new MessageChannel()
    this.port = port1
    // The worker needs none of the host's loader flags.
    this.worker = new Worker(MAILBOX + source, {
      eval: true, workerData: { ...workerData, box, port: port2 }, transferList: [port2], execArgv: [],
    })
    this.worker.on('error', (error) => this.failAll(error))
    this.worker.on('exit', () => {
      this.exited = true
      onExit?.()
      this.failAll(new Error(`checkpoints: the ${label} writer thread exited`))
    })
    // Idle between batches, it keeps no host alive on its own.
    this.worker.unref()
  }

  private failAll(error: unknown): void {
    const waiters = [...this.current ? [this.current] : [], ...this.queued.map((entry) => entry.waiter)]
    this.current = undefined
    this.queued.length = 0
    for (const waiter of waiters) waiter.reject(error)
  }

  /** Runs the groups (a statement each, see writer-statements.ts) in order, in one batch; resolves with each one's row count. */
  run(groups: string[][]): Promise<number[]> {
    return this.send(Slot.Batch, groups)
  }

  /** The thread started and its connection open: the store's first write does not pay for them. */
  async ready(): Promise<void> {
    await this.send(Slot.Ping, [])
  }

  private send(kind: Kind, groups: string[][]): Promise<number[]> {
    if (this.exited) return Promise.reject(new Error(`checkpoints: the ${this.label} writer thread exited`))
    if (this.closed && kind !== Slot.Close) return Promise.reject(new Error(`checkpoints: the ${this.label} writer thread is closing`))
    return new Promise<number[]>((resolve, reject) => {
      const waiter = { resolve, reject }
      if (this.current) this.queued.push({ kind, groups, waiter })
      else this.post(kind, groups, waiter)
    })
  }

  /** Puts a batch in the mailbox, wakes the thread, and awaits the done counter. */
  private post(kind: Kind, groups: string[][], waiter: Waiter): void {
    let slot: Slot = kind
    let length = 0
    if (kind === Slot.Batch) {
      // The texts as they are: nothing is encoded again here. Every UTF-16 unit is at most 3 bytes of
      // UTF-8, so most batches go straight into the mailbox, text by text, with no joined string.
      let units = 2
      for (const group of groups) {
        units += 3
        for (const text of group) units += text.length + 1
      }
      if (units * 3 <= MAILBOX_BYTES) length = this.put(groups)
      else {
        const text = `[${groups.map((group) => `[${group.join(',')}]`).join(',')}]`
        if (Buffer.byteLength(text) <= MAILBOX_BYTES) length = this.bytes.write(text, 0)
        else {
          slot = Slot.Port
          this.port.postMessage(text)
        }
      }
    }
    this.current = waiter
    const seq = ++this.seq
    this.head[Field.kind] = slot
    this.head[Field.length] = length
    Atomics.store(this.head, Field.seq, seq)
    Atomics.notify(this.head, Field.seq)
    // Waited for, it keeps the host alive until its reply.
    this.worker.ref()
    const wait = waitAsync(this.head, Field.done, seq - 1)
    if (wait.async) void wait.value.then(() => this.finish(waiter))
    else this.finish(waiter)
  }

  /** Writes `[[text, …], …]` into the mailbox (it fits: see `post`); its length in bytes. */
  private put(groups: string[][]): number {
    const bytes = this.bytes
    let at = 0
    bytes[at++] = 0x5b
    for (let i = 0; i < groups.length; i++) {
      if (i) bytes[at++] = 0x2c
      bytes[at++] = 0x5b
      const group = groups[i]
      for (let j = 0; j < group.length; j++) {
        if (j) bytes[at++] = 0x2c
        // Buffer#write encodes in place: no view of the mailbox is made per text.
        at += bytes.write(group[j], at)
      }
      bytes[at++] = 0x5d
    }
    bytes[at++] = 0x5d
    return at
  }

  /** The thread bumped the done counter: the batch's results (or error) are in the mailbox. */
  private finish(waiter: Waiter): void {
    // The thread ended while this batch waited (its waiter was rejected then).
    if (this.current !== waiter) return
    this.current = undefined
    // Read first (a barrier): what the thread wrote before bumping it is seen.
    Atomics.load(this.head, Field.done)
    const status = this.head[Field.status]
    const length = this.head[Field.length]
    let results: number[] | undefined
    let error: Error | undefined
    if (status === 0) results = Array.from(this.ints.subarray(0, length))
    else {
      const { message, code } = JSON.parse(this.bytes.toString('utf8', 0, length)) as { message: string; code?: string }
      error = Object.assign(new Error(`checkpoints (${this.label} writer): ${message}`), { code })
    }
    const next = this.queued.shift()
    if (next) this.post(next.kind, next.groups, next.waiter)
    else this.worker.unref()
    if (error) waiter.reject(error)
    else waiter.resolve(results!)
  }

  /**
   * Closes the thread's connection, then the thread; `before` runs once, before the thread is terminated.
   * `now`: terminated at once (a batch it is running is left unfinished: the database rolls it back).
   */
  close(before?: () => void, now = false): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined
      const done = () => {
        clearTimeout(timer)
        before?.()
        before = undefined
        this.port.close()
        void this.worker.terminate().then(() => resolve(), () => resolve())
      }
      // A thread that has already ended has no connection left to close.
      if (this.exited || now) return done()
      timer = setTimeout(done, 6000)
      this.worker.on('exit', done)
      // After the batches already sent: the thread closes its connection and says so.
      this.send(Slot.Close, []).then(done, done)
      this.closed = true
    })
    return this.closing
  }
}
