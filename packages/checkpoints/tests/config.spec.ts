import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { serviceOf } from './support.js'

/** cordis `ScopeStatus.FAILED`. */
const FAILED = 3

describe('checkpoints config: a bad bound fails the one plugin at load', function () {
  let dir: string
  let ctx: Context

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'checkpoints-config-'))
    ctx = new Context()
    // minato's plugin types do not unify with cordis' overloads under NodeNext; the runtime shapes are the ones cordis expects.
    ctx.plugin(Database as never)
    ctx.plugin(SQLiteDriver, { path: join(dir, 'store.db') })
    await ctx.start()
    await serviceOf(ctx, 'database')
  })

  afterEach(async () => {
    await ctx.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const cases: Array<[string, unknown, Record<string, unknown>]> = [
    ['maxRuns 0', Checkpoints, { maxRuns: 0 }],
    ['maxTranscriptBytes over 64 MiB', Checkpoints, { maxTranscriptBytes: 2 ** 30 }],
    ['sweepInterval past the timer range', Checkpoints, { sweepInterval: 2 ** 31 }],
    ['host with a space', Checkpoints, { host: 'a b' }],
    ['postgres url of another scheme', PostgresDriver, { url: 'mysql://x@127.0.0.1/db' }],
  ]
  for (const [what, plugin, config] of cases) {
    it(`${what}: that plugin fails, the database runs on`, async () => {
      const fork = ctx.plugin(plugin as never, config)
      await ctx.lifecycle.flush()
      expect(fork.status).to.equal(FAILED)
      expect(ctx.get('checkpoints')).to.equal(undefined)
      expect(ctx.get('database')).to.not.equal(undefined)
    })
  }

  it('a good config provides ctx.checkpoints', async () => {
    ctx.plugin(Checkpoints, { maxRuns: 5 })
    expect((await serviceOf(ctx, 'checkpoints')).limits.maxRuns).to.equal(5)
  })
})
