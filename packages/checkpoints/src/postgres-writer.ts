import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type { DirectWriter, WriteOp } from './write-ops.js'
import { RUN_COLUMNS as COLUMNS, type RunRow, TABLES } from './records.js'

// PostgreSQL's direct writes run in a worker thread with a connection of its own: the main thread
// builds each batch's statements and posts them; encoding the values, the protocol, the socket and
// the replies are the worker's. A batch's statements are pipelined on that one connection, in order.

/** The worker: plain CommonJS (it runs as is from src/ and lib/), with the `postgres` client of this package. */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const postgres = require(workerData.module)
const sql = postgres(workerData.url, {
  max: 1, connect_timeout: workerData.connectTimeout, onnotice: () => {},
  connection: { standard_conforming_strings: 'on' },
})
parentPort.on('message', async (message) => {
  if (message.close) {
    await sql.end({ timeout: 5 }).catch(() => {})
    parentPort.postMessage({ closed: true })
    return
  }
  try {
    if (message.ping) await sql\`SELECT 1\`
    const settled = await Promise.allSettled(message.ops.map(([text, params]) => sql.unsafe(text, params, { prepare: true })))
    const failed = settled.find((result) => result.status === 'rejected')
    if (failed) throw failed.reason
    parentPort.postMessage({ id: message.id, results: settled.map((result) => result.value.length) })
  } catch (error) {
    parentPort.postMessage({ id: message.id, error: { message: String((error && error.message) || error), code: error && error.code } })
  }
})
`

const KNOWN = new Set<string>(COLUMNS)
const INSERT = `INSERT INTO "${TABLES.runs}" (${COLUMNS.map((c) => `"${c}"`).join(', ')}) `
  + `VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')}) ON CONFLICT ("id") DO NOTHING RETURNING 1`

/** The driver's encoding: dates as ISO text (timestamptz), the rest as is. */
function value(v: unknown): unknown {
  if (v === undefined) return null
  if (v instanceof Date) return v.toISOString()
  return v
}

function statement(op: WriteOp): [string, unknown[]] {
  if (op.kind === 'insert') return [INSERT, COLUMNS.map((c) => value(op.row[c]))]
  const columns = Object.keys(op.changes).filter((key) => {
    if (!KNOWN.has(key)) throw new Error(`checkpoints: unknown run column ${key}`)
    return key !== 'id' && op.changes[key as keyof RunRow] !== undefined
  }) as Array<keyof RunRow>
  const text = `UPDATE "${TABLES.runs}" SET ${columns.map((c, i) => `"${c}" = $${i + 2}`).join(', ')} WHERE "id" = $1`
    + (op.guard ? ' AND "state" <> \'settled\'' : '') + ' RETURNING 1'
  return [text, [op.id, ...columns.map((c) => value(op.changes[c]))]]
}

interface Reply {
  id?: number
  results?: number[]
  error?: { message: string; code?: string }
  closed?: true
}

export class PostgresWorkerWriter implements DirectWriter {
  readonly kind = 'postgres'
  private readonly worker: Worker
  private readonly waiting = new Map<number, { resolve(results: number[]): void; reject(error: unknown): void }>()
  private next = 0
  private closing: Promise<void> | undefined

  constructor(config: { url: string; connectTimeout: number }) {
    const module = createRequire(import.meta.url).resolve('postgres')
    this.worker = new Worker(WORKER, {
      eval: true,
      workerData: { module, url: config.url, connectTimeout: Math.ceil(config.connectTimeout / 1000) },
      // The worker needs none of the host's loader flags.
      execArgv: [],
    })
    this.worker.on('message', (reply: Reply) => {
      if (reply.id === undefined) return
      const waiter = this.waiting.get(reply.id)
      this.waiting.delete(reply.id)
      if (!waiter) return
      if (reply.error) waiter.reject(Object.assign(new Error(`checkpoints (PostgreSQL writer): ${reply.error.message}`), { code: reply.error.code }))
      else waiter.resolve(reply.results!)
    })
    this.worker.on('error', (error) => this.failAll(error))
    this.worker.on('exit', () => this.failAll(new Error('checkpoints: the PostgreSQL writer thread exited')))
    // Idle between batches, it keeps no host alive on its own.
    this.worker.unref()
  }

  private failAll(error: unknown): void {
    for (const waiter of this.waiting.values()) waiter.reject(error)
    this.waiting.clear()
  }

  run(ops: WriteOp[]): Promise<number[]> {
    return this.post({ ops: ops.map(statement) })
  }

  /** The thread started and its connection open: the store's first write does not pay for them. */
  async ready(): Promise<void> {
    await this.post({ ops: [], ping: true })
  }

  private post(message: { ops: Array<[string, unknown[]]>; ping?: true }): Promise<number[]> {
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

  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        void this.worker.terminate().then(() => resolve(), () => resolve())
      }
      const timer = setTimeout(done, 6000)
      this.worker.on('message', (reply: Reply) => { if (reply.closed) done() })
      this.worker.on('exit', done)
      this.worker.ref()
      this.worker.postMessage({ close: true })
    })
    return this.closing
  }
}
