// Issue 38, item 1: a clean stop right after children settle loses nothing. Two children settle,
// the host stops at once (no wait), in both plugin orders, on SQLite and PostgreSQL; a restart on
// the same store finds each settled run once, with its result, and a resume never runs it again.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '../packages/checkpoints/tests/support.js'
import { freshPostgres } from '../packages/checkpoints/tests/support.js'
import { type OnceHost, startOnceHost, turns } from './support/durable-once.js'

function stopBehaviour(kind: Backend['kind']) {
  let dir: string
  const hosts: OnceHost[] = []
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-stop-')) })
  afterEach(async () => { for (const host of hosts.splice(0)) await host.stop() })
  after(() => rmSync(dir, { recursive: true, force: true }))

  for (const order of ['service-first', 'database-first'] as const) {
    it(`${order}: each child that settled before ctx.stop() is recorded once with its result, and a resume never runs it again`, async () => {
      const backend: Backend = kind === 'sqlite' ? { kind, path: join(dir, `${order}.db`) } : { kind }
      if (kind === 'postgres') await freshPostgres()
      for (let round = 0; round < 4; round++) {
        const first = await startOnceHost(backend, order)
        hosts.push(first)
        const parent = first.ctx.agents.create({ label: 'root' })
        const signal = new AbortController().signal
        const children = await Promise.all(['a', 'b'].map((label) => first.ctx.subagents.delegate('once', { prompt: 'done', label, parent, signal })))
        const outcomes = await Promise.all(children.map((child) => child.result))
        expect(outcomes.map((outcome) => outcome.output)).to.deep.equal(['done a', 'done b'])
        await first.stop()

        const second = await startOnceHost(backend, order)
        hosts.push(second)
        const before = { ...turns }
        for (const [index, child] of children.entries()) {
          const record = await second.ctx.checkpoints.load(child.id)
          expect(record, `round ${round}: the record of child ${index}`).to.include({ state: 'settled', stopReason: 'completed', result: outcomes[index].output })
          expect((await second.ctx.checkpoints.list({ root: record!.root })).filter((run) => run.id === child.id)).to.have.length(1)
          const error = await second.ctx.subagents.resume(child.id, 'again').then(() => undefined, (reason: unknown) => reason as { code: string; message: string })
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
  describe('on PostgreSQL (CHECKPOINTS_PG_URL)', () => stopBehaviour('postgres'))
})
