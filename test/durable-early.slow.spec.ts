// Issue 38, item 9: a delegation that ends before ctx.checkpoints is ready (its database still
// opening) is recorded once the store is ready; what cannot wait (past the bounds, or a stop
// first) is logged once with its count. And an app's `exit` (what the cordis and Koishi loaders
// await on SIGINT/SIGTERM before the process exits) runs the queued writes first.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, Logger } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService, { type SubagentOutcome, type SubagentRunInfo } from '@cordis-subagents/subagents-service'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { type Backend, freshPostgres, PG_URL, serviceOf, startStore } from '../packages/checkpoints/tests/support.js'
import { CheckpointJournal } from '../packages/subagents-service/src/durable/journal-checkpoints.js'
import { WaitingJournal } from '../packages/subagents-service/src/durable/journal-waiting.js'
import { onceProvider, type OnceHost, startOnceHost } from './support/durable-once.js'
import { waitFor } from './support/host-process-wait.js'
import { captureLogs } from './support/logs.js'
import { tick } from './support/async.js'

/** An app whose checkpoints plugin is loaded but waits for its database: `openDatabase()` loads the driver. */
async function earlyApp(backend: Backend) {
  const ctx = new Context()
  ctx.plugin(ToolRegistry, {})
  ctx.plugin(AgentRuntime, {})
  ctx.plugin(SubagentService, {})
  ctx.plugin(Database as never)
  ctx.plugin(Checkpoints, { host: 'early-host' })
  ctx.plugin({ name: 'once', apply: (inner: Context) => { inner.subagents.register(onceProvider()) } })
  await ctx.start()
  return {
    ctx,
    openDatabase() {
      if (backend.kind === 'sqlite') ctx.plugin(SQLiteDriver, { path: backend.path })
      else ctx.plugin(PostgresDriver as never, { url: PG_URL })
      return serviceOf(ctx, 'checkpoints')
    },
  }
}

const done = (id: string): SubagentOutcome => ({
  stopReason: 'completed', status: 'done', output: `done ${id}`, work: { steps: 1, toolCalls: 0, delegations: 0 }, durationMs: 1,
})
const runOf = (id: string) => ({
  id, checkpoint: () => undefined,
  info: Object.freeze({ runId: id, provider: 'once', parentId: 'agent-root', depth: 1, startedAt: Date.now() }) as SubagentRunInfo,
})

function earlyBehaviour(kind: Backend['kind']) {
  let dir: string
  let backend: Backend
  const stops: Array<() => Promise<void>> = []
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-early-')) })
  beforeEach(async () => {
    backend = kind === 'sqlite' ? { kind, path: join(dir, `${Date.now()}-${Math.random()}.db`) } : { kind }
    if (kind === 'postgres') await freshPostgres()
  })
  afterEach(async () => { for (const stop of stops.splice(0)) await stop() })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('a delegation that ends before ctx.checkpoints is ready is recorded once it is', async () => {
    const app = await earlyApp(backend)
    stops.push(() => app.ctx.stop())
    const parent = app.ctx.agents.create({ label: 'root' })
    const child = await app.ctx.subagents.delegate('once', { prompt: 'done', label: 'early', parent, signal: new AbortController().signal })
    expect((await child.result).output).to.equal('done early')
    expect(app.ctx.get('checkpoints'), 'the store is not ready yet').to.equal(undefined)
    const checkpoints = await app.openDatabase()
    await waitFor(async () => (await checkpoints.load(child.id))?.state === 'settled', 'the early run recorded')
    expect(await checkpoints.load(child.id))
      .to.include({ stopReason: 'completed', result: 'done early', label: 'early', path: `${parent.id}/${child.id}` })
  })

  it('past the count bound, the kept runs are recorded and the rest are logged once with their count', async () => {
    const store = await startStore(backend)
    stops.push(() => store.stop())
    const logs = captureLogs()
    try {
      const log = new Logger('durable-test')
      const waiting = new WaitingJournal(log, () => true, { maxNotes: 2, maxMs: 60_000 })
      for (const id of ['kept', 'lost-1', 'lost-2']) {
        waiting.started(runOf(id))
        waiting.settled(runOf(id), done(id))
      }
      const journal = new CheckpointJournal(store.ctx, () => store.checkpoints, log)
      waiting.replay(journal)
      await journal.flush()
      expect(await store.checkpoints.load('kept')).to.include({ state: 'settled', result: 'done kept' })
      expect(await store.checkpoints.load('lost-1')).to.equal(undefined)
      const warnings = logs.records.filter((record) => record.type === 'warn' && /not recorded/.test(record.content))
      expect(warnings).to.have.length(1)
      expect(warnings[0].content).to.match(/^2 run\(s\) were not recorded .*more than 2 state changes waited.*lost-1, lost-2/)
    } finally {
      logs.restore()
    }
  })

  it('a stop before ctx.checkpoints was ready logs once how many runs were not recorded', async () => {
    const app = await earlyApp(backend)
    const logs = captureLogs()
    try {
      const parent = app.ctx.agents.create({ label: 'root' })
      const signal = new AbortController().signal
      for (const label of ['a', 'b']) await (await app.ctx.subagents.delegate('once', { prompt: 'done', label, parent, signal })).result
      await app.ctx.stop()
      await tick()
      const warnings = logs.records.filter((record) => record.type === 'warn' && /not recorded/.test(record.content))
      expect(warnings.map((record) => record.content.replace(/Runs: .*/, ''))).to.deep.equal([
        '2 run(s) were not recorded in ctx.checkpoints (the host stopped before it was ready): '
        + 'they cannot be listed, resumed or re-read after a restart. ',
      ])
    } finally {
      logs.restore()
    }
  })

  it('the app\'s exit event runs the queued writes: a run handed over right before a stop is recorded', async () => {
    const hosts: OnceHost[] = []
    stops.push(async () => { for (const host of hosts) await host.stop() })
    const first = await startOnceHost(backend, 'service-first')
    hosts.push(first)
    const parent = first.ctx.agents.create({ label: 'root' })
    const signal = new AbortController().signal
    const child = await first.ctx.subagents.delegate('once', { prompt: 'ask', label: 'asked', parent, signal })
    // What the loader's daemon does on SIGTERM before process.exit() (cordis/lib/worker).
    await (first.ctx as unknown as { parallel(name: 'exit', signal: string): Promise<void> }).parallel('exit', 'SIGTERM')
    await first.stop()
    const second = await startOnceHost(backend, 'service-first')
    hosts.push(second)
    expect(await second.ctx.checkpoints.load(child.id)).to.include({ label: 'asked', path: `${parent.id}/${child.id}` })
  })
}

describe('records that wait for ctx.checkpoints, and the exit flush (issue 38, item 9)', function () {
  this.timeout(60_000)
  describe('on SQLite', () => earlyBehaviour('sqlite'))
  describe('on PostgreSQL (CHECKPOINTS_PG_URL)', () => earlyBehaviour('postgres'))
})
