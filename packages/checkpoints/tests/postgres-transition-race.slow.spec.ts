// Two hosts on one PostgreSQL database (two apps, two connection pools) race to continue the same
// stored run: the store's conditional UPDATE lets exactly one of them move it to running.
import { expect } from 'chai'
import { freshPostgres, startStore, type StoreApp } from './support.js'

const RESUMABLE = ['parked', 'interrupted', 'closed'] as const

describe('a run\'s state transition raced by two hosts on one PostgreSQL database', function () {
  this.timeout(60_000)
  const apps: StoreApp[] = []
  afterEach(async () => { for (const app of apps.splice(0)) await app.stop() })

  it('exactly one host moves a parked run to running, in every round', async () => {
    await freshPostgres()
    apps.push(await startStore({ kind: 'postgres' }, { host: 'host-a' }), await startStore({ kind: 'postgres' }, { host: 'host-b' }))
    const [a, b] = apps.map((app) => app.checkpoints)
    await a.save({ id: 'shared', path: 'root/shared', parent: 'root', provider: 'spawn', state: 'parked' })
    for (let round = 0; round < 40; round++) {
      await a.save({ id: 'shared', state: round % 2 ? 'interrupted' : 'parked' })
      const moved = await Promise.all([a, b, a, b].map((store) => store.transition('shared', [...RESUMABLE], 'running')))
      expect(moved.filter(Boolean), `round ${round}`).to.have.length(1)
    }
    expect(await b.transition('shared', 'running', { state: 'settled', stopReason: 'completed', result: 'once' })).to.equal(true)
    const again = await Promise.all([a, b].map((store) => store.transition('shared', [...RESUMABLE, 'running'], 'running')))
    expect(again).to.deep.equal([false, false])
    expect(await a.load('shared')).to.include({ state: 'settled', result: 'once', host: 'host-b' })
  })
})
