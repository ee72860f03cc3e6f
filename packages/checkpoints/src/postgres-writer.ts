import { createRequire } from 'node:module'
import type { DirectWriter, WriteOp } from './write-ops.js'
import { RUN_COLUMNS as COLUMNS, type RunRow, TABLES } from './records.js'
import { type Statement, WriterThread } from './writer-thread.js'

// PostgreSQL's direct writes run in a worker thread with a connection of its own: the main thread
// builds each batch's statements and hands them over through shared memory (writer-thread.ts);
// encoding the values, the protocol, the socket and the replies are the worker's. A batch's statements
// are pipelined on that one connection, in order.

/** The worker: plain CommonJS (it runs as is from src/ and lib/), with the `postgres` client of this package. */
const WORKER = `
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
      const settled = await Promise.allSettled(message.ops.map(([text, params]) => sql.unsafe(text, params, { prepare: true })))
      const failed = settled.find((result) => result.status === 'rejected')
      if (failed) throw failed.reason
      mailbox.done(settled.map((result) => result.value.length))
    } catch (error) {
      mailbox.failed(error)
    }
  }
})()
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

function statement(op: WriteOp): Statement {
  if (op.kind === 'insert') return [INSERT, COLUMNS.map((c) => value(op.row[c]))]
  const columns = Object.keys(op.changes).filter((key) => {
    if (!KNOWN.has(key)) throw new Error(`checkpoints: unknown run column ${key}`)
    return key !== 'id' && op.changes[key as keyof RunRow] !== undefined
  }) as Array<keyof RunRow>
  const text = `UPDATE "${TABLES.runs}" SET ${columns.map((c, i) => `"${c}" = $${i + 2}`).join(', ')} WHERE "id" = $1`
    + (op.guard ? ' AND "state" <> \'settled\'' : '') + ' RETURNING 1'
  return [text, [op.id, ...columns.map((c) => value(op.changes[c]))]]
}

export class PostgresWorkerWriter implements DirectWriter {
  readonly kind = 'postgres'
  private readonly thread: WriterThread

  constructor(config: { url: string; connectTimeout: number }) {
    const module = createRequire(import.meta.url).resolve('postgres')
    this.thread = new WriterThread(WORKER, { module, url: config.url, connectTimeout: Math.ceil(config.connectTimeout / 1000) }, 'PostgreSQL')
  }

  run(ops: WriteOp[]): Promise<number[]> {
    return this.thread.run(ops.map(statement))
  }

  ready(): Promise<void> {
    return this.thread.ready()
  }

  close(): Promise<void> {
    return this.thread.close()
  }
}
