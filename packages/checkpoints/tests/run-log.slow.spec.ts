// The run log in one process, on both stores: a logged settle fulfils before its batch is written
// (the record is then in the log only), once the batch is written the log replays nothing, a refusal the write meets is not
// the caller's, and a store started again in the same process (a reload) while the one before still
// drains loses nothing that one had logged (the second opens the file once the first closed it).
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { unwrittenIn } from '../src/run-log.js'
import { type Backend, freshPostgres, startStore, type StoreApp } from './support.js'

const START = { path: 'p', provider: 'spawn', state: 'running' } as const
/** Runs the first store has queued (logged, not yet written) when it is stopped. */
const RELOADED = 200

describe('checkpoints: the run log', function () {
  this.timeout(60_000)
  let dir: string
  let apps: StoreApp[] = []

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'checkpoints-run-log-'))
  })
  afterEach(async () => {
    for (const app of apps.reverse()) await app.stop()
    apps = []
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  let n = 0
  const backends: Array<[string, () => Promise<Backend>]> = [
    ['SQLite', async () => ({ kind: 'sqlite', path: join(dir, `store-${++n}.db`) })],
    ['PostgreSQL', async () => (await freshPostgres(), { kind: 'postgres' })],
  ]
  for (const [name, prepare] of backends) {
    it(`${name}: a logged settle fulfils once in the log, before its batch; the batch written, the log replays nothing`, async () => {
      const backend = await prepare()
      const runLog = join(dir, `a-${n}.runlog`)
      const app = await startStore(backend, { runLog })
      apps.push(app)
      expect(statSync(runLog).size, 'empty after the start').to.equal(0)
      await app.checkpoints.record({ id: 'l1', ...START }, { created: true, lazy: true })
      await app.checkpoints.record({ id: 'l1', state: 'settled', result: 'done' }, { logged: true })
      // Only promise jobs ran since: the batch (at the next turn) is not written, the record is in the log.
      expect(statSync(runLog).size).to.be.greaterThan(0)
      // The settle merged into its start record, still queued: one row, its final one, keeping its start time.
      const [[logged], ...more] = unwrittenIn(runLog)
      expect(more, 'one record in the log').to.deep.equal([])
      expect(logged).to.include({ kind: 'insert', id: 'l1' })
      const given = (logged as { given: Record<string, unknown> }).given
      expect(given).to.include({ state: 'settled', result: 'done', path: START.path })
      expect(given.createdAt).to.be.a('number').and.at.most(given.updatedAt as number)
      await app.checkpoints.drain()
      expect(unwrittenIn(runLog), 'nothing to replay once its batch is written').to.deep.equal([])
      expect(await app.checkpoints.load('l1')).to.include({ state: 'settled', result: 'done' })
      // A refusal the write meets later (no such run) is logged by the store, not the caller's.
      await app.checkpoints.record({ id: 'missing', state: 'settled', result: 'x' }, { logged: true })
      await app.checkpoints.drain()
      expect(await app.checkpoints.load('missing')).to.equal(undefined)
    })

    it(`${name}: a settle merged into its start record still queued keeps the start's time; a later settle of it is an update of its own`, async () => {
      const backend = await prepare()
      const app = await startStore(backend, { runLog: join(dir, `m-${n}.runlog`) })
      apps.push(app)
      const realNow = Date.now
      const at = realNow.call(Date)
      try {
        Date.now = () => at - 60_000
        await app.checkpoints.record({ id: 'm1', ...START }, { created: true, lazy: true })
        Date.now = () => at
        await app.checkpoints.record({ id: 'm1', state: 'settled', result: 'first' }, { logged: true })
      } finally {
        Date.now = realNow
      }
      await app.checkpoints.drain()
      const run = (await app.checkpoints.load('m1'))!
      expect(run).to.include({ state: 'settled', result: 'first', path: START.path })
      expect(run.createdAt.getTime()).to.equal(at - 60_000)
      expect(run.updatedAt.getTime()).to.equal(at)
      // Written already: a second logged settle is an update of its own (its result replaces the first).
      await app.checkpoints.record({ id: 'm1', state: 'settled', result: 'second' }, { logged: true })
      await app.checkpoints.drain()
      expect(await app.checkpoints.load('m1')).to.include({ state: 'settled', result: 'second' })
    })

    it(`${name}: without a run log ('off') a logged settle waits for its batch, as without the option`, async () => {
      const backend = await prepare()
      const runLog = join(dir, `b-${n}.runlog`)
      const app = await startStore(backend, { runLog: 'off' })
      apps.push(app)
      await app.checkpoints.record({ id: 'w1', ...START }, { created: true })
      const settled = app.checkpoints.record({ id: 'w1', state: 'settled', result: 'done' }, { logged: true })
      let done = false
      void settled.then(() => { done = true })
      await Promise.resolve()
      expect(done, 'not before its batch').to.equal(false)
      await settled
      expect(existsSync(runLog)).to.equal(false)
      // Written: a refusal reaches the caller as before.
      const refused = await app.checkpoints.record({ id: 'none', state: 'settled' }, { logged: true }).then(() => undefined, (error) => error)
      expect(refused).to.have.property('code', 'CHECKPOINT_NOT_FOUND')
    })

    it(`${name}: a store started again in this process while the one before still drains keeps all it had logged`, async () => {
      const backend = await prepare()
      const runLog = join(dir, `c-${n}.runlog`)
      const first = await startStore(backend, { runLog })
      for (let i = 0; i < RELOADED; i++) {
        await first.checkpoints.record({ id: `c${i}`, ...START }, { created: true, lazy: true })
        await first.checkpoints.record({ id: `c${i}`, state: 'settled', result: `r${i}` }, { logged: true })
      }
      // Not awaited, as cordis does not await a plugin's stop: the next store starts while this one drains.
      const stopping = first.stop()
      const second = await startStore(backend, { runLog })
      apps.push(second)
      await stopping
      for (let i = 0; i < RELOADED; i++) expect(await second.checkpoints.load(`c${i}`), `c${i}`).to.include({ state: 'settled', result: `r${i}` })
      expect(statSync(runLog).size).to.equal(0)
    })
  }
})
