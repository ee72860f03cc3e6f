import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { DirectWriter } from './write-ops.js'
import { statementsSource } from './writer-statements.js'
import { WriterThread } from './writer-thread.js'

// SQLite's direct writes run in a worker thread with a second connection to the store's file (its
// own sql.js instance): the main thread hands each batch's encoded writes over through shared memory
// (writer-thread.ts), and the worker, blocked on that mailbox between batches, builds their
// statements (writer-statements.ts) and runs them in one transaction. minato's WASM build of SQLite has no file locks, so the two
// connections take turns through a lock in shared memory: the worker holds it for a batch, the main
// thread for each statement minato's driver runs (and from BEGIN to COMMIT of a minato
// transaction). Both connections stay in SQLite's normal locking mode, so each checks the file's
// change counter when it starts a transaction and drops a page cache the other made stale.

const WORKER = `${statementsSource('sqlite')}
const { workerData } = require('node:worker_threads')
const lock = new Int32Array(workerData.lock)
const acquire = () => { while (Atomics.compareExchange(lock, 0, 0, 2) !== 0) Atomics.wait(lock, 0, Atomics.load(lock, 0), 20) }
const release = () => { Atomics.store(lock, 0, 0); Atomics.notify(lock, 0) }
const statements = new Map()
require(workerData.module)({ locateFile: (file) => workerData.dist + '/' + file }).then((SQL) => {
  const db = new SQL.Database(workerData.path)
  db.exec('PRAGMA journal_mode = PERSIST')
  return db
}).then(serve, (error) => serve({ error }))
// The thread blocks on the mailbox between batches: sql.js is synchronous, nothing else runs here.
function serve(db) {
  for (;;) {
    mailbox.waitSync()
    const message = mailbox.read()
    if (message.close) {
      if (!db.error) { for (const statement of statements.values()) statement.free(); db.close() }
      return mailbox.done([])
    }
    if (db.error) { mailbox.failed(db.error); continue }
    if (message.ping) { mailbox.done([]); continue }
    let statements
    try {
      statements = statementsOf(message.groups)
    } catch (error) {
      mailbox.failed(error)
      continue
    }
    acquire()
    let results
    try {
      results = batch(db, statements)
    } catch (error) {
      release()
      mailbox.failed(error)
      continue
    }
    release()
    mailbox.done(results)
  }
}
function batch(db, ops) {
  db.run('BEGIN')
  const results = []
  try {
    for (const [text, params] of ops) {
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
  return results
}
`

/** The part of minato's SQLite driver the lock wraps: every statement it runs goes through `_exec`. */
interface MinatoSqlite {
  _exec(sql: string, params: unknown, callback: (statement: unknown) => unknown): unknown
}

export class SqliteWorkerWriter implements DirectWriter {
  readonly kind = 'sqlite'
  private readonly thread: WriterThread
  private readonly lock = new Int32Array(new SharedArrayBuffer(4))
  private readonly unpatch: () => void

  constructor(driver: MinatoSqlite, readonly file: string) {
    const module = createRequire(import.meta.url).resolve('@minatojs/sql.js')
    // A thread that ended holding the lock (it crashed, or was terminated mid-batch) would leave minato's
    // statements waiting forever on the main thread: its hold (2) is dropped; the main thread's own (1) is not.
    const dropDeadHold = () => {
      if (Atomics.compareExchange(this.lock, 0, 2, 0) === 2) Atomics.notify(this.lock, 0)
    }
    this.thread = new WriterThread(WORKER, { module, dist: dirname(module), path: file, lock: this.lock.buffer }, 'SQLite', dropDeadHold)
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

  run(groups: string[][]): Promise<number[]> {
    return this.thread.run(groups)
  }

  ready(): Promise<void> {
    return this.thread.ready()
  }

  close(now?: boolean): Promise<void> {
    return this.thread.close(() => this.unpatch(), now)
  }
}

/** The file of minato's SQLite driver (undefined for `:memory:`, which a second connection cannot share). */
export function sqliteFile(driver: { path?: string }): string | undefined {
  return driver.path && driver.path !== ':memory:' ? join(driver.path) : undefined
}
