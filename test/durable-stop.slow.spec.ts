// Issue 38, item 1: a clean stop right after children settle loses nothing. Two children settle,
// the host stops at once (no wait), in both plugin orders, on SQLite and PostgreSQL; a restart on
// the same store finds each settled run once, with its result, and a resume never runs it again.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { within } from '@cordis-subagents/test-support'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { CheckpointJournal } from '../packages/subagents-service/src/durable/journal-checkpoints.js'
import type { Backend } from '../packages/checkpoints/tests/support.js'
import { freshPostgres, PG_URL } from '../packages/checkpoints/tests/support.js'
import { type OnceHost, startOnceHost, turns } from './support/durable-once.js'
import { captureLogs } from './support/logs.js'
import { deferred } from './support/async.js'

function stopBehaviour(kind: Backend['kind']) {
  let dir: string
  const hosts: OnceHost[] = []
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-stop-')) })
  afterEach(async () => { for (const host of hosts.splice(0)) await host.stop() })
  after(() => rmSync(dir, { recursive: true, force: true }))

  for (const order of ['service-first', 'database-first'] as const) {
    it(`${order}: each child settled before ctx.stop() is recorded once with its result, and a resume never runs it again`, async () => {
      const backend: Backend = kind === 'sqlite' ? { kind, path: join(dir, `${order}.db`) } : { kind }
      if (kind === 'postgres') await freshPostgres()
      for (let round = 0; round < 4; round++) {
        const first = await startOnceHost(backend, order)
        hosts.push(first)
        const parent = first.ctx.agents.create({ label: 'root' })
        const signal = new AbortController().signal
        const delegate = (label: string) => first.ctx.subagents.delegate('once', { prompt: 'done', label, parent, signal })
        const children = await Promise.all(['a', 'b'].map(delegate))
        const outcomes = await Promise.all(children.map((child) => child.result))
        expect(outcomes.map((outcome) => outcome.output)).to.deep.equal(['done a', 'done b'])
        await first.stop()

        const second = await startOnceHost(backend, order)
        hosts.push(second)
        const before = { ...turns }
        for (const [index, child] of children.entries()) {
          const record = await second.ctx.checkpoints.load(child.id)
          expect(record, `round ${round}: the record of child ${index}`)
            .to.include({ state: 'settled', stopReason: 'completed', result: outcomes[index].output })
          expect((await second.ctx.checkpoints.list({ root: record!.root })).filter((run) => run.id === child.id)).to.have.length(1)
          const error = await second.ctx.subagents.resume(child.id, 'again')
            .then(() => undefined, (reason: unknown) => reason as { code: string; message: string })
          expect(error?.code, `round ${round}: resume of a settled child`).to.equal('NOT_PARKED')
          expect(error?.message).to.match(/ended \(completed\) and never runs again/)
        }
        expect(turns).to.deep.equal(before, 'no child turn ran after the restart')
        await second.stop()
      }
    })
  }
}

describe('a clean stop right after children settle (issue 38, item 1)', function () {
  this.timeout(120_000)
  describe('on SQLite', () => stopBehaviour('sqlite'))
  describe('on PostgreSQL (CHECKPOINTS_PG_URL)', () => {
    stopBehaviour('postgres')

    it('a hung store delays an outcome, the exit and the store\'s stop each by a bound, never forever', async () => {
      // The three bounds (5 s each in production) lowered for this test: the journal's record wait and exit flush, and
      // the store's stop. Each delay is measured against its bound, and each wait must still end.
      const bound = 400
      const saved = { record: CheckpointJournal.recordWaitMs, exit: CheckpointJournal.exitFlushMs }
      CheckpointJournal.recordWaitMs = CheckpointJournal.exitFlushMs = bound
      // A timer may fire up to a millisecond before its bound as performance.now() counts it.
      const took = async (what: string, work: Promise<unknown>) => {
        const start = performance.now()
        await within(work, 15_000, what)
        expect(performance.now() - start, `${what} waited its bound`).to.be.at.least(bound - 2)
      }
      // Another session holds the runs table: every write of the store waits on the lock (a hung database).
      const holder = postgres(PG_URL, { max: 1, onnotice: () => {} })
      const released = deferred()
      const locked = deferred()
      let lock: Promise<unknown> | undefined
      let host: OnceHost | undefined
      const logs = captureLogs()
      try {
        await freshPostgres()
        host = await startOnceHost({ kind: 'postgres' }, 'service-first')
        withoutCallerTracing(host.ctx.checkpoints).stopWritesMs = bound
        lock = holder.begin(async (tx) => {
          await tx`LOCK TABLE subagent_run IN ACCESS EXCLUSIVE MODE`
          locked.resolve()
          await released.promise
        })
        await locked.promise
        const { ctx } = host
        const parent = ctx.agents.create({ label: 'root' })
        const signal = new AbortController().signal
        await took('the outcome', (async () => {
          const child = await ctx.subagents.delegate('once', { prompt: 'done', label: 'hung', parent, signal })
          expect((await child.result).output).to.equal('done hung')
        })())
        const warned = (text: string) => logs.records.some((record) => record.type === 'warn' && record.content.includes(text))
        expect(warned(`its record was not written within ${bound} ms`)).to.equal(true)
        await took('the exit', (ctx as unknown as { parallel(name: 'exit', signal: string): Promise<void> }).parallel('exit', 'SIGTERM'))
        expect(warned(`exit: checkpoint writes still queued after ${bound} ms`)).to.equal(true)
        // ctx.stop(), then the store's stopped(): its writes waited for at most its bound (STOP_WRITES_MS), then its writer thread ended.
        await took('the stop', host.stop())
        expect(warned(`writes still queued after ${bound} ms at stop`)).to.equal(true)
      } finally {
        logs.restore()
        released.resolve()
        await lock?.catch(() => {})
        await holder.end({ timeout: 1 })
        await host?.stop()
        CheckpointJournal.recordWaitMs = saved.record
        CheckpointJournal.exitFlushMs = saved.exit
      }
    })
  })
})
