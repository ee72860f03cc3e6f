// Issue 38, item 2: a stored run is continued at most once. A child parks, its host stops, and a
// restarted host resumes it by run id: a second resume (right after the first, or racing it, or
// from a second host on the same PostgreSQL database) is refused and never runs the child again.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SubagentOutcome } from '@cordis-subagents/subagents-service'
import { type Backend, freshPostgres } from '../packages/checkpoints/tests/support.js'
import { type OnceHost, startOnceHost, turns } from './support/durable-once.js'
import { waitFor } from './support/host-process-wait.js'

const ROUNDS = 8

function resumeBehaviour(kind: Backend['kind']) {
  let dir: string
  let backend: Backend
  const hosts: OnceHost[] = []
  const start = async (host?: string) => {
    const started = await startOnceHost(backend, 'service-first', host)
    hosts.push(started)
    return started
  }
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-resume-')) })
  beforeEach(async () => {
    backend = kind === 'sqlite' ? { kind, path: join(dir, `${Date.now()}-${Math.random()}.db`) } : { kind }
    if (kind === 'postgres') await freshPostgres()
  })
  afterEach(async () => { for (const host of hosts.splice(0)) await host.stop() })
  after(() => rmSync(dir, { recursive: true, force: true }))

  /** Parks `count` children on a host that then stops; their run ids. */
  async function parkedChildren(count: number): Promise<string[]> {
    const first = await start()
    const parent = first.ctx.agents.create({ label: 'root' })
    const signal = new AbortController().signal
    const ask = () => first.ctx.subagents.delegate('once', { prompt: 'ask', parent, signal })
    const children = await Promise.all(Array.from({ length: count }, ask))
    for (const child of children) expect((await child.result).stopReason).to.equal('pending')
    await first.stop()
    return children.map((child) => child.id)
  }

  const refusal = (promise: Promise<SubagentOutcome>) => promise.then(() => undefined, (error: { code: string }) => error.code)

  it(`a second resume right after the first completed is refused and runs nothing (${ROUNDS} children)`, async () => {
    const ids = await parkedChildren(ROUNDS)
    const host = await start()
    for (const id of ids) {
      const before = { ...turns }
      const outcome = await host.ctx.subagents.resume(id, 'blue')
      expect(outcome).to.include({ stopReason: 'completed', output: 'got blue' })
      expect(await refusal(host.ctx.subagents.resume(id, 'red')), `second resume of ${id}`).to.equal('NOT_PARKED')
      expect(turns).to.deep.equal({ ...before, restore: before.restore + 1, answer: before.answer + 1 })
      await waitFor(async () => (await host.ctx.checkpoints.load(id))?.state === 'settled', `run ${id} settled in the store`)
      expect(await refusal(host.ctx.subagents.resume(id, 'green'))).to.equal('NOT_PARKED')
      expect(await host.ctx.checkpoints.load(id)).to.include({ state: 'settled', result: 'got blue' })
      expect(turns.restore).to.equal(before.restore + 1)
    }
  })

  it(`of two racing resumes one continues the run and the other is refused (${ROUNDS} children)`, async () => {
    const ids = await parkedChildren(ROUNDS)
    const host = await start()
    for (const id of ids) {
      const before = { ...turns }
      const results = await Promise.allSettled([host.ctx.subagents.resume(id, 'blue'), host.ctx.subagents.resume(id, 'red')])
      expect(results.filter((result) => result.status === 'fulfilled'), `resumes of ${id}`).to.have.length(1)
      const codes = results.map((result) => result.status === 'rejected' && (result.reason as { code: string }).code).filter(Boolean)
      expect(codes).to.deep.equal(['NOT_PARKED'])
      expect(turns).to.deep.equal({ ...before, restore: before.restore + 1, answer: before.answer + 1 })
    }
  })

  if (kind === 'postgres') {
    it(`two hosts on one database racing to resume a run: one continues it (${ROUNDS} children)`, async () => {
      const ids = await parkedChildren(ROUNDS)
      const [a, b] = [await start(), await start()]
      for (const id of ids) {
        const before = { ...turns }
        const results = await Promise.allSettled([a.ctx.subagents.resume(id, 'blue'), b.ctx.subagents.resume(id, 'red')])
        expect(results.filter((result) => result.status === 'fulfilled'), `resumes of ${id}`).to.have.length(1)
        expect(turns.restore).to.equal(before.restore + 1)
        expect(turns.answer).to.equal(before.answer + 1)
      }
    })
  }
}

describe('a stored run is continued at most once (issue 38, item 2)', function () {
  this.timeout(120_000)
  describe('on SQLite', () => resumeBehaviour('sqlite'))
  describe('on PostgreSQL (CHECKPOINTS_PG_URL)', () => resumeBehaviour('postgres'))
})
