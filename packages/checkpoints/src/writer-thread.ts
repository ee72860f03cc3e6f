import { Worker } from 'node:worker_threads'

// The main thread's side of a writer thread (postgres-writer.ts, sqlite-writer.ts): posts a batch of
// statements, waits for its reply by id, keeps the host alive only while a reply is awaited, and
// closes the thread's connection before terminating it (forced after 6 s).

interface Reply {
  id?: number
  results?: number[]
  error?: { message: string; code?: string }
  closed?: true
}

export type Statement = [text: string, params: unknown[]]

export class WriterThread {
  private readonly worker: Worker
  private readonly waiting = new Map<number, { resolve(results: number[]): void; reject(error: unknown): void }>()
  private next = 0
  private closing: Promise<void> | undefined
  private exited = false

  /**
   * `source`: the worker's CommonJS text; `label`: the store's name in errors ("PostgreSQL", "SQLite");
   * `onExit`: runs when the thread has ended, however it ended.
   */
  constructor(source: string, workerData: object, label: string, onExit?: () => void) {
    // The worker needs none of the host's loader flags.
    this.worker = new Worker(source, { eval: true, workerData, execArgv: [] })
    this.worker.on('message', (reply: Reply) => {
      if (reply.id === undefined) return
      const waiter = this.waiting.get(reply.id)
      this.waiting.delete(reply.id)
      if (!waiter) return
      if (reply.error) waiter.reject(Object.assign(new Error(`checkpoints (${label} writer): ${reply.error.message}`), { code: reply.error.code }))
      else waiter.resolve(reply.results!)
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
    for (const waiter of this.waiting.values()) waiter.reject(error)
    this.waiting.clear()
  }

  /** Runs the statements in order, in one batch; resolves with each one's affected-row count. */
  run(statements: Statement[]): Promise<number[]> {
    return this.post({ ops: statements })
  }

  /** The thread started and its connection open: the store's first write does not pay for them. */
  async ready(): Promise<void> {
    await this.post({ ops: [], ping: true })
  }

  private post(message: { ops: Statement[]; ping?: true }): Promise<number[]> {
    const id = this.next++
    return new Promise<number[]>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      // Waited for, it keeps the host alive until its reply.
      if (this.waiting.size === 1) this.worker.ref()
      this.worker.postMessage({ id, ...message })
    }).finally(() => {
      if (!this.waiting.size) this.worker.unref()
    })
  }

  /** Closes the thread's connection, then the thread; `before` runs once, before the thread is terminated. */
  close(before?: () => void): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined
      const done = () => {
        clearTimeout(timer)
        before?.()
        before = undefined
        void this.worker.terminate().then(() => resolve(), () => resolve())
      }
      // A thread that has already ended has no connection left to close.
      if (this.exited) return done()
      timer = setTimeout(done, 6000)
      this.worker.on('message', (reply: Reply) => { if (reply.closed) done() })
      this.worker.on('exit', done)
      this.worker.ref()
      this.worker.postMessage({ close: true })
    })
    return this.closing
  }
}
