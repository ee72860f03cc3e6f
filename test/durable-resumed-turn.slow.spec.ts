// Issue 38, item 3, after an answer: a spawn child parks, is answered, and its host dies while the
// answered turn goes on. The record written at the resume must hold that turn up to its last
// completed step, not the parked turn it left: a restore from it comes back idle with its task,
// never parked again on the question already answered (whose answer would then go to it twice).
// Real service, provider-spawn and ctx.checkpoints on SQLite and PostgreSQL; the host's death is
// what a SIGKILL leaves (the record), restored through the provider as a restart does.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { type AgentCheckpoint, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import type { ProviderStartRequest, RunRecord } from '@cordis-subagents/subagents-service'
import { freshPostgres, PG_URL, serviceOf } from '../packages/checkpoints/tests/support.js'
import { type Host, startHost } from './support/host.js'
import { waitFor } from './support/host-process-wait.js'

const never = (signal: AbortSignal) => new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))
const lastUser = (request: GenerateRequest) => request.messages.filter((m) => m.role === 'user').at(-1)?.content

function behaviour(database: (ctx: Context) => void, before: () => Promise<void> = async () => {}) {
  let host: Host
  const seen: string[][] = []

  beforeEach(async () => {
    await before()
    seen.length = 0
    host = await startHost({
      before(ctx) {
        ctx.plugin(Database as never)
        database(ctx)
        ctx.plugin(Checkpoints, { host: 'resumed-turn' })
        ctx.plugin(Spawn as never, { name: 'spawn', askParent: true })
      },
    })
    await serviceOf(host.ctx, 'checkpoints')
    host.ctx.agents.registerModel('child', new ScriptedModel((request) => {
      const answered = request.messages.some((m) => m.role === 'tool' && m.name === 'ask_parent')
      if (lastUser(request) === 'please finish') {
        seen.push(request.messages.map((m) => `${m.role}: ${m.content}`))
        return { text: 'painted it' }
      }
      if (!answered) return { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] }
      return never(request.signal) // the answered turn is in flight when the host dies
    }))
  })
  afterEach(async () => { await host.stop() })

  it('the record written at the resume holds the answered turn; restored, the child is idle with the answer, then finishes', async () => {
    const { ctx } = host
    const checkpoints = ctx.checkpoints
    const parent = ctx.agents.create({ model: 'child' })
    const run = await ctx.subagents.delegate('spawn', { prompt: 'paint the fence', parent, signal: new AbortController().signal })
    expect((await run.result).stopReason).to.equal('pending')
    await waitFor(async () => (await checkpoints.load(run.id))?.state === 'parked', 'the parked record')
    void run.resume('blue')
    await waitFor(async () => (await checkpoints.load(run.id))?.state === 'running', 'the resumed record')

    // What a SIGKILL now leaves: this record (a restart marks it interrupted).
    const stored = (await checkpoints.load(run.id))!.transcript as AgentCheckpoint
    expect(stored.parked, 'not the parked turn the child left').to.equal(undefined)
    // Its task, then the answered step when the answer had landed as the write ran (it goes through
    // the ask tool's resume, a few ticks after the resume): either is a completed-step prefix.
    const kept = stored.messages.map((m) => `${m.role}: ${m.content}`)
    const answered = ['user: paint the fence', 'assistant: ', 'tool: blue']
    expect([answered.slice(0, 1), answered]).to.deep.include(kept)

    const record: RunRecord = { runId: run.id, provider: 'spawn', parentId: parent.id, depth: 1, state: 'interrupted', checkpoint: stored }
    const request: ProviderStartRequest = { prompt: '(restored)', parent: ctx.agents.create({}), signal: new AbortController().signal, runId: 'restored', depth: 1 }
    const restored = await ctx.subagents.get('spawn')!.restore!(record, request)
    expect((await restored.result).stopReason, 'idle, not parked on the answered question').to.equal('interrupted')
    restored.send!('please finish')
    expect(await restored.wake!()).to.deep.include({ stopReason: 'completed', output: 'painted it' })
    expect(seen).to.deep.equal([[...kept, 'user: please finish']])
    await restored.dispose()
    run.cancel()
    await run.dispose()
  })
}

describe('durable: a child answered, then its host dies mid-turn', function () {
  this.timeout(60_000)

  describe('on SQLite (a file in a temp dir)', () => {
    let dir: string
    before(() => { dir = mkdtempSync(join(tmpdir(), 'resumed-turn-')) })
    after(() => rmSync(dir, { recursive: true, force: true }))
    behaviour((ctx) => ctx.plugin(SQLiteDriver, { path: join(dir, `${Date.now()}.db`) }))
  })

  describe('on PostgreSQL (CHECKPOINTS_PG_URL; the test run starts one)', () => {
    behaviour((ctx) => ctx.plugin(PostgresDriver as never, { url: PG_URL }), freshPostgres)
  })
})
