import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { RUN_COLUMNS as COLUMNS, type RunRow, TABLES } from './records.js'
import type { DirectWriter, WriteOp } from './write-ops.js'

// SQLite's direct writes run in a worker thread with a second connection to the store's file (its
// own sql.js instance): the main thread builds each batch's statements and posts them, and the
// worker runs them in one transaction. minato's WASM build of SQLite has no file locks, so the two
// connections take turns through a lock in shared memory: the worker holds it for a batch, the main
// thread for each statement minato's driver runs (and from BEGIN to COMMIT of a minato
// transaction). Both connections stay in SQLite's normal locking mode, so each checks the file's
// change counter when it starts a transaction and drops a page cache the other made stale.

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const lock = new Int32Array(workerData.lock)
const acquire = () => { while (Atomics.compareExchange(lock, 0, 0, 2) !== 0) Atomics.wait(lock, 0, Atomics.load(lock, 0), 20) }
const release = () => { Atomics.store(lock, 0, 0); Atomics.notify(lock, 0) }
const opened = require(workerData.module)({ locateFile: (file) => workerData.dist + '/' + file }).then((SQL) => {
  const db = new SQL.Database(workerData.path)
  db.exec('PRAGMA journal_mode = PERSIST')
  return db
})
const statements = new Map()
let chain = Promise.resolve()
parentPort.on('message', (message) => { chain = chain.then(() => handle(message)) })
async function handle(message) {
  const db = await opened.catch((error) => ({ error }))
  if (message.close) {
    if (!db.error) { for (const statement of statements.values()) statement.free(); db.close() }
    parentPort.postMessage({ closed: true })
    return
  }
  if (db.error) return parentPort.postMessage({ id: message.id, error: { message: String(db.error.message || db.error) } })
  if (message.ping) return parentPort.postMessage({ id: message.id, results: [] })
  acquire()
  try {
    db.run('BEGIN')
    const results = []
    try {
      for (const [text, params] of message.ops) {
        let statement = statements.get(text)
        if (!statement) statements.set(text, statement = db.prepare(text))
        statement.run(params)
        results.push(db.getRowsModified())
      }
      db.run('COMMIT')
    } catch (error) {
      try { db.run('ROLLBACK') } catch {}
      throw error
    }
    parentPort.postMessage({ id: message.id, results })
  } catch (error) {
    parentPort.postMessage({ id: message.id, error: { message: String((error && error.message) || error), code: error && error.code } })
  } finally {
    release()
  }
}
`

/** minato's SQLite encoding: booleans as 0/1, dates as epoch milliseconds. */
function value(v: unknown): unknown {
  if (v === undefined) return null
  if (typeof v === 'boolean') return +v
  if (v instanceof Date) return v.getTime()
  return v
}

const INSERT = `INSERT INTO \`${TABLES.runs}\` (${COLUMNS.map((c) => `\`${c}\``).join(', ')}) `
  + `VALUES (${COLUMNS.map(() => '?').join(', ')}) ON CONFLICT (\`id\`) DO NOTHING`
const KNOWN = new Set<string>(COLUMNS)

function statement(op: WriteOp): [string, unknown[]] {
  if (op.kind === 'insert') return [INSERT, COLUMNS.map((c) => value(op.row[c]))]
  const columns = COLUMNS.filter((key) => key !== 'id' && op.changes[key] !== undefined)
  for (const key of Object.keys(op.changes)) if (!KNOWN.has(key)) throw new Error(`checkpoints: unknown run column ${key}`)
  const text = `UPDATE \`${TABLES.runs}\` SET ${columns.map((c) => `\`${c}\` = ?`).join(', ')} WHERE \`id\` = ?`
    + (op.guard ? ' AND `state` <> \'settled\'' : '')
  return [text, [...columns.map((c) => value(op.changes[c as keyof RunRow])), op.id]]
}

/** The part of minato's SQLite driver the lock wraps: every statement it runs goes through `_exec`. */
interface MinatoSqlite {
  _exec(sql: string, params: unknown, callback: (statement: unknown) => unknown): unknown
}

interface Reply {
  id?: number
  results?: number[]
  error?: { message: string; code?: string }
  closed?: true
}

export class SqliteWorkerWriter implements DirectWriter {
  readonly kind = 'sqlite'
  private readonly worker: Worker
  private readonly lock = new Int32Array(new SharedArrayBuffer(4))
  private readonly waiting = new Map<number, { resolve(results: number[]): void; reject(error: unknown): void }>()
  private next = 0
  private closing: Promise<void> | undefined
  private readonly unpatch: () => void

  constructor(driver: MinatoSqlite, path: string) {
    const require = createRequire(import.meta.url)
    const module = require.resolve('@minatojs/sql.js')
    this.worker = new Worker(WORKER, {
      eval: true,
      workerData: { module, dist: dirname(module), path, lock: this.lock.buffer },
      execArgv: [],
    })
    this.worker.on('message', (reply: Reply) => {
      if (reply.id === undefined) return
      const waiter = this.waiting.get(reply.id)
      this.waiting.delete(reply.id)
      if (!waiter) return
      if (reply.error) waiter.reject(Object.assign(new Error(`checkpoints (SQLite writer): ${reply.error.message}`), { code: reply.error.code }))
      else waiter.resolve(reply.results!)
    })
    this.worker.on('error', (error) => this.failAll(error))
    this.worker.on('exit', () => this.failAll(new Error('checkpoints: the SQLite writer thread exited')))
    this.worker.unref()
    this.unpatch = this.patch(driver)
  }

  /** minato's statements take the lock too (held from BEGIN to COMMIT or ROLLBACK of a transaction). */
  private patch(driver: MinatoSqlite): () => void {
    const exec = driver._exec
    const lock = this.lock
    let transaction = false
    driver._exec = function (this: MinatoSqlite, sql, params, callback) {
      const held = transaction
      if (!held) while (Atomics.compareExchange(lock, 0, 0, 1) !== 0) Atomics.wait(lock, 0, Atomics.load(lock, 0), 20)
      let keep = held
      try {
        const result = exec.call(this, sql, params, callback)
        if (/^\s*BEGIN/i.test(sql)) keep = transaction = true
        else if (/^\s*(COMMIT|ROLLBACK|END)/i.test(sql)) keep = transaction = false
        return result
      } catch (error) {
        if (/^\s*(COMMIT|ROLLBACK|END)/i.test(sql)) keep = transaction = false
        throw error
      } finally {
        if (!keep) {
          Atomics.store(lock, 0, 0)
          Atomics.notify(lock, 0)
        }
      }
    }
    return () => {
      driver._exec = exec
    }
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
        this.unpatch()
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

/** The file of minato's SQLite driver (undefined for `:memory:`, which a second connection cannot share). */
export function sqliteFile(driver: { path?: string }): string | undefined {
  return driver.path && driver.path !== ':memory:' ? join(driver.path) : undefined
}
