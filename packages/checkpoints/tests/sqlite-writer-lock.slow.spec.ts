/// <reference types="mocha" />
// The SQLite writer thread and minato's connection take turns through a lock in shared memory. A
// thread that ends while it holds the lock (a crash, a terminate mid-batch) must not leave minato's
// statements on the main thread waiting for it forever.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { SqliteWorkerWriter } from '../src/sqlite-writer.js'

describe('checkpoints: the SQLite writer thread\'s lock', () => {
  it('a thread that ends holding the lock drops its hold, and the store still closes at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sqlite-writer-lock-'))
    const driver = { _exec: (_sql: string, _params: unknown, callback: (statement: unknown) => unknown) => callback(undefined) }
    const writer = new SqliteWorkerWriter(driver, join(dir, 'store.db'))
    const internals = writer as unknown as { lock: Int32Array; thread: { worker: { terminate(): Promise<number>; once(event: 'exit', listener: () => void): void } } }
    try {
      await writer.ready()
      Atomics.store(internals.lock, 0, 2) // as the thread holds it during a batch
      const exited = new Promise<void>((resolve) => internals.thread.worker.once('exit', resolve))
      await internals.thread.worker.terminate()
      await exited
      expect(Atomics.load(internals.lock, 0), 'the dead thread\'s hold').to.equal(0)
      // minato's next statement takes the lock and gives it back.
      driver._exec('SELECT 1', [], () => undefined)
      expect(Atomics.load(internals.lock, 0)).to.equal(0)
      const closing = Date.now()
      await writer.close()
      expect(Date.now() - closing, 'close() of a thread that already ended waits for nothing').to.be.below(5000)
    } finally {
      await writer.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
