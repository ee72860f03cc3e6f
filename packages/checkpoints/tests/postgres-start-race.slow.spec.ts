// Hosts starting together on an empty PostgreSQL database: every one creates the same tables and
// indexes at once, and every one must come up.
import { expect } from 'chai'
import { freshPostgres, startStore, type StoreApp } from './support.js'

describe('several hosts starting together on one empty PostgreSQL database', function () {
  this.timeout(60_000)
  let apps: StoreApp[] = []

  afterEach(async () => {
    await Promise.all(apps.map((app) => app.stop()))
    apps = []
  })

  for (const round of [1, 2, 3]) {
    it(`all four come up and see each other's runs (round ${round})`, async () => {
      await freshPostgres()
      const started = await Promise.allSettled([1, 2, 3, 4].map((n) => startStore({ kind: 'postgres' }, { host: `h${n}` })))
      apps = started.flatMap((result) => result.status === 'fulfilled' ? [result.value] : [])
      expect(started.map((result) => result.status === 'rejected' ? String(result.reason) : 'ok')).to.deep.equal(['ok', 'ok', 'ok', 'ok'])
      await Promise.all(apps.map((app, i) => app.checkpoints.save({ id: `run-${i}`, path: `run-${i}`, provider: 'spawn', state: 'running' })))
      expect(await apps[0].checkpoints.list({ state: 'running' })).to.have.length(4)
    })
  }
})
