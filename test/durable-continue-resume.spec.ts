// A continue and a resume by run id of one ended run never both run (audit D7). The continue takes the store's
// `continueRun` compare-and-set (ended → running) before its new turn starts, so whichever of the two comes second is
// refused with a stable code: a continue `NOT_SETTLED` while a resume restores the run, a resume `NOT_PARKED` while a
// continue starts or runs its turn. A continue whose turn never started puts the record back as it was. Real service,
// store and SQLite file; the provider is a fixture at the far edge whose restore and continue wait for the test.
import { expect } from 'chai'
import fc from 'fast-check'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { type Deferred, deferred } from '@cordis-subagents/shared'
import type { SubagentProvider, SubagentResult, SubagentRun } from '@cordis-subagents/subagents-service'
import type { Host } from './support/host.js'
import { sqliteHost } from './support/sqlite-host.js'
import { waitFor } from './support/host-process-wait.js'
import { until } from './support/async.js'

/** Every turn the fixture ran after the first (a restore's new turn, a continue's), by run id. */
const turns: string[] = []
/** While set, a restore and a continue wait for it before they hand their run over (entered: they were called). */
const gates: { restore?: Deferred<void>; continue?: Deferred<void>; both?: Deferred<void>; failContinue?: boolean } = {}
const entered = { restore: 0, continue: 0 }

/** A restore or a continue of the fixture began; both at once resolve `gates.both` (two turns of one run id). */
function enter(kind: 'restore' | 'continue'): void {
  entered[kind]++
  if (entered.restore && entered.continue) gates.both?.resolve()
}

function closer(): SubagentProvider {
  const run = (id: string, first: SubagentResult): SubagentRun => ({
    id, childId: `child-of-${id}`, result: Promise.resolve(first), cancel: () => {}, dispose: async () => {},
    send: () => {},
    wake: async () => {
      turns.push(`resume ${id}`)
      return { stopReason: 'completed', output: 'woken' }
    },
    checkpoint: () => ({ v: 1 }),
    continueWith: async (message, request) => {
      enter('continue')
      await gates.continue?.promise
      if (gates.failContinue) throw new Error('the child is gone')
      turns.push(`continue ${request.runId}`)
      return run(request.runId, { stopReason: 'completed', output: `continued with ${message}` })
    },
  })
  return {
    name: 'fx',
    capabilities: { persona: false, toolFilter: false, depthLimit: false },
    inheritsParentContext: false,
    start: async (request) => run(request.runId, { stopReason: 'closed', output: 'closed early' }),
    async restore(record, request) {
      enter('restore')
      await gates.restore?.promise
      return run(request.runId, { stopReason: 'interrupted', output: '' })
    },
  }
}

async function durableHost(file: string): Promise<Host> {
  const host = await sqliteHost(file, 'continue-resume', {
    before(ctx: Context) {
      ctx.plugin({ name: 'fx', apply: (inner: Context) => { inner.subagents.register(closer()) } })
    },
  })
  return host
}

/** A run that ended closed: continuable in memory, `closed` in the store, not live. */
async function closedRun(host: Host): Promise<string> {
  const { ctx } = host
  const run = await ctx.subagents.delegate('fx', { prompt: 'close', parent: ctx.agents.create({ label: 'lead' }), signal: new AbortController().signal })
  expect((await run.result).stopReason).to.equal('closed')
  await run.dispose()
  await waitFor(async () => (await ctx.checkpoints.load(run.id))?.state === 'closed', 'the run closed in the store')
  return run.id
}

type Settled = { ok: string } | { code: string; message: string }
const settle = (promise: Promise<string>): Promise<Settled> =>
  promise.then((ok) => ({ ok }), (error: { code: string; message: string }) => ({ code: error.code, message: error.message }))

function resumeOf(host: Host, runId: string): Promise<Settled> {
  return settle(host.ctx.subagents.resume(runId, 'shorten it').then((outcome) => outcome.output))
}

function continueOf(host: Host, runId: string): Promise<Settled> {
  return settle(host.ctx.subagents.continue(runId, 'polish it').then(async (handle) => {
    const outcome = await handle.result
    await handle.dispose()
    return outcome.output
  }))
}

describe('durable: a continue and a resume by run id of one ended run never both run (audit D7)', function () {
  this.timeout(60_000)
  let dir: string
  let host: Host | undefined
  let n = 0
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-continue-resume-')) })
  beforeEach(() => {
    turns.length = 0
    entered.restore = entered.continue = 0
    delete gates.restore
    delete gates.continue
    delete gates.both
    delete gates.failContinue
  })
  afterEach(async () => { await host?.stop() })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const start = async () => (host = await durableHost(join(dir, `run-${++n}.db`)))

  it('a continue while a resume restores the run is refused NOT_SETTLED, and only the resume\'s turn runs', async () => {
    const { ctx } = await start()
    const runId = await closedRun(host!)
    gates.restore = deferred()
    const resumed = resumeOf(host!, runId)
    await waitFor(() => entered.restore === 1, 'the provider restores the run')
    const continued = await continueOf(host!, runId)
    expect(continued).to.include({ code: 'NOT_SETTLED' })
    expect((continued as { message: string }).message).to.match(/running in the checkpoint store.*Wait for that outcome/)
    gates.restore.resolve()
    expect(await resumed).to.deep.equal({ ok: 'woken' })
    expect(turns).to.deep.equal([`resume ${runId}`])
    expect(entered.continue, 'continueWith never called').to.equal(0)
    await waitFor(async () => (await ctx.checkpoints.load(runId))?.result === 'woken', 'the resumed outcome recorded')
  })

  it('a resume while a continue starts its turn is refused NOT_PARKED, and only the continue\'s turn runs', async () => {
    const { ctx } = await start()
    const runId = await closedRun(host!)
    gates.continue = deferred()
    const continued = continueOf(host!, runId)
    await waitFor(() => entered.continue === 1, 'the provider starts the continued turn')
    const resumed = await resumeOf(host!, runId)
    expect(resumed).to.include({ code: 'NOT_PARKED' })
    gates.continue.resolve()
    expect(await continued).to.deep.equal({ ok: 'continued with polish it' })
    expect(turns).to.deep.equal([`continue ${runId}`])
    expect(entered.restore, 'restore never called').to.equal(0)
    await waitFor(async () => (await ctx.checkpoints.load(runId))?.result === 'continued with polish it', 'the continued outcome recorded')
  })

  it('a continue whose turn did not start puts the record back: a resume by run id then continues the run', async () => {
    const { ctx } = await start()
    const runId = await closedRun(host!)
    gates.failContinue = true
    expect(await continueOf(host!, runId)).to.have.property('code')
    expect((await ctx.checkpoints.load(runId))!.state, 'the record put back').to.equal('closed')
    delete gates.failContinue
    expect(await resumeOf(host!, runId)).to.deep.equal({ ok: 'woken' })
  })

  it('whichever comes first and however they interleave, one run id never runs two turns at once (fast-check)', async () => {
    await fc.assert(fc.asyncProperty(fc.boolean(), fc.integer({ min: 0, max: 3 }), fc.boolean(), async (resumeFirst, gap, hold) => {
      await host?.stop()
      const { ctx } = await start()
      turns.length = 0
      const runId = await closedRun(host!)
      entered.restore = entered.continue = 0
      if (hold) {
        gates.restore = deferred()
        gates.continue = deferred()
        gates.both = deferred()
      }
      const first = resumeFirst ? resumeOf(host!, runId) : continueOf(host!, runId)
      for (let turn = 0; turn < gap; turn++) await new Promise<void>((resolve) => setImmediate(resolve))
      const second = resumeFirst ? continueOf(host!, runId) : resumeOf(host!, runId)
      // Held: the one that won waits in the provider until the other was decided (refused), or both entered it.
      if (hold) await Promise.race([first, second, gates.both!.promise])
      if (hold) {
        await until(() => entered.restore + entered.continue > 0, 'the winner began its turn')
        expect(entered, 'one turn began, never two').to.satisfy(({ restore, continue: more }: typeof entered) => restore + more === 1)
      }
      gates.restore?.resolve()
      gates.continue?.resolve()
      const outcomes = await Promise.all([first, second])
      const ran = outcomes.filter((outcome) => 'ok' in outcome)
      // Unheld, both may run, one after the other: the second came after the first's turn ended.
      expect(ran.length, JSON.stringify(outcomes)).to.be.oneOf(hold ? [1] : [1, 2])
      expect(turns.length, JSON.stringify({ outcomes, turns })).to.equal(ran.length)
      for (const outcome of outcomes) {
        if ('code' in outcome) expect(outcome.code).to.be.oneOf(['NOT_SETTLED', 'NOT_PARKED'])
      }
      await waitFor(async () => ['settled', 'closed'].includes((await ctx.checkpoints.load(runId))?.state ?? ''), 'the run ended in the store')
      delete gates.restore
      delete gates.continue
      delete gates.both
    }), { numRuns: 12, includeErrorInReport: true })
  })
})
