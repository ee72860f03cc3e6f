import { createRequire } from 'node:module'
import type { DirectWriter } from './write-ops.js'
import { statementsSource } from './writer-statements.js'
import { WriterThread } from './writer-thread.js'

// PostgreSQL's direct writes run in a worker thread with a connection of its own: the main thread
// hands each batch's encoded writes over through shared memory (writer-thread.ts); building the
// statements (writer-statements.ts), encoding the values, the protocol, the socket and the replies
// are the worker's. A batch's statements
// are pipelined on that one connection, in order.

/** The worker: plain CommonJS (it runs as is from src/ and lib/), with the `postgres` client of this package. */
const WORKER = `${statementsSource('postgres')}
const { parentPort, workerData } = require('node:worker_threads')
const postgres = require(workerData.module)
const sql = postgres(workerData.url, {
  max: 1, connect_timeout: workerData.connectTimeout, onnotice: () => {},
  connection: { standard_conforming_strings: 'on' },
})
// A listener keeps the thread alive while it waits on the mailbox (Atomics.waitAsync holds no handle).
const alive = () => {}
parentPort.on('message', alive)
;(async () => {
  for (;;) {
    await mailbox.wait()
    const message = mailbox.read()
    if (message.close) {
      await sql.end({ timeout: 5 }).catch(() => {})
      parentPort.off('message', alive)
      return mailbox.done([])
    }
    try {
      if (message.ping) await sql\`SELECT 1\`
      const settled = await Promise.allSettled(statementsOf(message.groups).map(([text, params]) => sql.unsafe(text, params, { prepare: true })))
      const failed = settled.find((result) => result.status === 'rejected')
      if (failed) throw failed.reason
      mailbox.done(settled.map((result) => result.value.length))
    } catch (error) {
      mailbox.failed(error)
    }
  }
})()
`

export class PostgresWorkerWriter implements DirectWriter {
  readonly kind = 'postgres'
  private readonly thread: WriterThread

  constructor(config: { url: string; connectTimeout: number }) {
    const module = createRequire(import.meta.url).resolve('postgres')
    this.thread = new WriterThread(WORKER, { module, url: config.url, connectTimeout: Math.ceil(config.connectTimeout / 1000) }, 'PostgreSQL')
  }

  run(groups: string[][]): Promise<number[]> {
    return this.thread.run(groups)
  }

  ready(): Promise<void> {
    return this.thread.ready()
  }

  close(now?: boolean): Promise<void> {
    return this.thread.close(undefined, now)
  }
}
