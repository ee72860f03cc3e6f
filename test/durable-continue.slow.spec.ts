// Issue 38, item 10, with ctx.checkpoints: continuing a spawn child that ended records the new turn
// under the same run id (one record: running while the turn goes on, then settled with the new
// outcome); the first turn is never run again. Real service, provider-spawn and SQLite / PostgreSQL.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { type AgentCheckpoint, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import { freshPostgres, PG_URL, serviceOf } from '../packages/checkpoints/tests/support.js'
import { type Host, startHost } from './support/host.js'
import { waitFor } from './support/host-process-wait.js'

function behaviour(database: (ctx: Context) => void, before: () => Promise<void> = async () => {}) {
  let host: Host
  let calls: string[][]

  beforeEach(async () => {
    await before()
    calls = []
    host = await startHost({
      before(ctx) {
        ctx.plugin(Database as never)
        database(ctx)
        ctx.plugin(Checkpoints, { host: 'continue-host' })
        ctx.plugin(Spawn as never, { name: 'spawn' })
      },
    })
    await serviceOf(host.ctx, 'checkpoints')
    host.ctx.agents.registerModel('child', new ScriptedModel((request) => {
      calls.push(request.messages.filter((m) => m.role === 'user').map((m) => m.content))
      return { text: `answer ${calls.length}` }
    }))
  })
  afterEach(async () => { await host.stop() })

  it('one record per run: the continued turn\'s outcome replaces the first\'s, the transcript holds both turns', async () => {
    const { ctx } = host
    const parent = ctx.agents.create({ model: 'child' })
    const first = await ctx.subagents.delegate('spawn', { prompt: 'draft it', parent, signal: new AbortController().signal })
    await first.result
    await first.dispose()
    await waitFor(async () => (await ctx.checkpoints.load(first.id))?.result === 'answer 1', 'the first outcome recorded')

    const next = await ctx.subagents.continue(first.id, 'polish it', { parent })
    expect((await next.result).output).to.equal('answer 2')
    await next.dispose()
    await waitFor(async () => (await ctx.checkpoints.load(first.id))?.result === 'answer 2', 'the continued outcome recorded')
    const record = (await ctx.checkpoints.load(first.id))!
    expect(record).to.deep.include({ state: 'settled', stopReason: 'completed', provider: 'spawn' })
    expect((await ctx.checkpoints.list()).map((run) => run.id)).to.deep.equal([first.id])
    // The first turn ran once; the continue was its own turn, on the whole transcript.
    expect(calls).to.deep.equal([['draft it'], ['draft it', 'polish it']])
    // The record written when the continue started holds the transcript it goes on from (a SIGKILL
    // during the continued turn leaves it interrupted and resumable with both turns).
    const started = record.transcript as AgentCheckpoint
    expect(started.messages.map((m) => m.content)).to.deep.equal(['draft it', 'answer 1', 'polish it'])
  })
}

describe('durable: continuing a run that ended', function () {
  this.timeout(60_000)

  describe('on SQLite (a file in a temp dir)', () => {
    let dir: string
    before(() => { dir = mkdtempSync(join(tmpdir(), 'continue-')) })
    after(() => rmSync(dir, { recursive: true, force: true }))
    behaviour((ctx) => ctx.plugin(SQLiteDriver, { path: join(dir, `${Date.now()}.db`) }))
  })

  describe('on PostgreSQL (CHECKPOINTS_PG_URL; the test run starts one)', () => {
    behaviour((ctx) => ctx.plugin(PostgresDriver as never, { url: PG_URL }), freshPostgres)
  })
})
