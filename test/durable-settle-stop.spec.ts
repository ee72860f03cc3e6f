// A run that ends right before a clean stop is recorded ended (audit D1): the settle of a parked run (a question open, a
// background task, a closed run: a transcript or a question to write) goes to the store's run log in the journal's
// hook, so a `ctx.stop()` in the same tick no longer loses it; after the restart the run is settled, its question is
// not pending, and a resume is refused and runs nothing. What the stop itself ends (a holder disposing, as the app goes,
// the parked runs it keeps) is not the run's outcome: that run stays parked and resumes after the restart.
// Real service, store and SQLite file; the provider is a fixture at the far edge.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import type { PendingQuestion } from '@cordis-subagents/shared'
import type { SubagentHandle, SubagentProvider, SubagentResult, SubagentRun } from '@cordis-subagents/subagents-service'
import type { Host } from './support/host.js'
import { sqliteHost } from './support/sqlite-host.js'
import { waitFor } from './support/host-process-wait.js'

/** What the fixture was asked to do, across host starts (one process). */
const calls = { start: 0, restore: 0, answer: 0 }

/** A child that asks one question at start ("ask"), or ends closed ("close"); an answer completes it at once. */
function asker(): SubagentProvider {
  const run = (id: string, first: SubagentResult): SubagentRun => ({
    id, childId: `child-of-${id}`, result: Promise.resolve(first), cancel: () => {}, dispose: async () => {},
    resume: async (answer) => {
      calls.answer++
      return { stopReason: 'completed', output: `got ${answer}` }
    },
    checkpoint: () => ({ v: 1 }),
  })
  const question = (runId: string): PendingQuestion => ({ id: `q-${runId}`, kind: 'ask', text: 'Which colour?', path: [] })
  return {
    name: 'fx',
    capabilities: { persona: false, toolFilter: false, depthLimit: false },
    inheritsParentContext: false,
    async start(request) {
      calls.start++
      return run(request.runId, request.prompt === 'close'
        ? { stopReason: 'closed', output: 'closed early' }
        : { stopReason: 'pending', output: '', question: question(request.runId) })
    },
    async restore(record, request) {
      calls.restore++
      return run(request.runId, record.state === 'parked'
        ? { stopReason: 'pending', output: '', question: record.question! }
        : { stopReason: 'interrupted', output: '' })
    },
  }
}

async function durableHost(file: string): Promise<Host> {
  const host = await sqliteHost(file, 'settle-stop', {
    before(ctx: Context) {
      ctx.plugin({ name: 'fx', apply: (inner: Context) => { inner.subagents.register(asker()) } })
    },
  })
  return host
}

/** Delegates a child that parks, and waits until its park and question are in the store. */
async function parkedChild(host: Host, options: { background?: boolean } = {}): Promise<SubagentHandle & { cancelTask?: () => void }> {
  const { ctx } = host
  const parent = ctx.agents.create({ label: 'lead' })
  const task = options.background
    ? ctx.subagents.background.start({ parent, label: 'paint', provider: 'fx', onTurnEnd: 'end', turnSignal: new AbortController().signal })
    : undefined
  const handle = await ctx.subagents.delegate('fx', { prompt: 'ask', parent, signal: new AbortController().signal })
  if (task) {
    task.markStarted(handle)
    task.bind((reason) => handle.cancel(String(reason)))
  }
  expect((await handle.result).stopReason).to.equal('pending')
  await waitFor(async () => (await ctx.checkpoints.questions.pending({ runId: handle.id })).length === 1, 'the question stored')
  return Object.assign(handle, task ? { cancelTask: () => task.cancel('the lead changed its mind') } : {})
}

/** After the restart: the run is recorded ended, its question is not pending, and a resume is refused and runs nothing. */
async function expectEnded(host: Host, runId: string, state: string, stopReason: string): Promise<void> {
  const { ctx } = host
  const record = (await ctx.checkpoints.load(runId))!
  expect(record, 'the record after the restart').to.include({ state, stopReason })
  // A question whose cancel the stop cut off is cancelled by the next start.
  await waitFor(async () => (await ctx.checkpoints.questions.pending({ runId })).length === 0, 'no pending question of the ended run')
  expect(ctx.subagents.pending().map((run) => run.runId)).to.not.include(runId)
  const before = { ...calls }
  const refused = await ctx.subagents.resume(runId, 'blue').then(() => undefined, (error: { code?: string }) => error)
  expect(refused?.code, 'a resume of the ended run').to.equal('NOT_PARKED')
  expect(calls, 'no provider call after the restart').to.deep.equal(before)
}

describe('durable: a run that ends right before ctx.stop() is recorded ended (audit D1)', function () {
  this.timeout(60_000)
  let dir: string
  const hosts: Host[] = []
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-settle-stop-')) })
  afterEach(async () => { for (const host of hosts.splice(0)) await host.stop() })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const start = async (file: string) => {
    const host = await durableHost(join(dir, file))
    hosts.push(host)
    return host
  }

  for (const how of ['dispose', 'cancel'] as const) {
    it(`a parked run its holder ends (${how}) in the tick of ctx.stop() is settled after the restart, its question not pending`, async () => {
      const first = await start(`${how}.db`)
      const child = await parkedChild(first)
      const ends: string[] = []
      first.ctx.subagents.observe({ 'subagent/end': (info, outcome) => { ends.push(`${info.runId} ${outcome.stopReason}`) } })
      if (how === 'dispose') void child.dispose()
      else child.cancel('not needed any more')
      const stopped = first.stop()
      expect(ends, 'the end was emitted before the stop').to.deep.equal([`${child.id} aborted`])
      await stopped

      await expectEnded(await start(`${how}.db`), child.id, 'settled', 'aborted')
    })
  }

  it('a background run cancelled in the tick of ctx.stop() is settled as a background run', async () => {
    const first = await start('background.db')
    const child = await parkedChild(first, { background: true })
    child.cancelTask!()
    await first.stop()

    const second = await start('background.db')
    expect(await second.ctx.checkpoints.load(child.id)).to.include({ background: true, label: 'bg-1 paint' })
    await expectEnded(second, child.id, 'settled', 'aborted')
  })

  it('an answered run that ends while its resume record is still being written is settled with its output', async () => {
    const first = await start('answer.db')
    const child = await parkedChild(first)
    let stopped: Promise<void> | undefined
    // Right after the journal's settle hook (it runs once subagent/end was emitted), before the resume's writes ran.
    first.ctx.subagents.observe({ 'subagent/end': () => { queueMicrotask(() => { stopped = first.stop() }) } })
    const outcome = await child.resume('blue')
    expect(outcome.output).to.equal('got blue')
    await waitFor(() => stopped !== undefined, 'the stop began')
    await stopped

    const second = await start('answer.db')
    expect((await second.ctx.checkpoints.load(child.id))!.result).to.equal('got blue')
    await expectEnded(second, child.id, 'settled', 'completed')
  })

  it('a closed run that ends in the tick of ctx.stop() is closed after the restart, with its checkpoint', async () => {
    const first = await start('closed.db')
    const parent = first.ctx.agents.create({ label: 'lead' })
    // The journal's settle hook runs in the run's end; stop right after it, in the same tick.
    let stopped: Promise<void> | undefined
    first.ctx.subagents.observe({ 'subagent/end': () => { queueMicrotask(() => { stopped = first.stop() }) } })
    const run = await first.ctx.subagents.delegate('fx', { prompt: 'close', parent, signal: new AbortController().signal })
    await waitFor(() => stopped !== undefined, 'the run ended and the stop began')
    await stopped

    const second = await start('closed.db')
    const record = (await second.ctx.checkpoints.load(run.id))!
    expect(record).to.include({ state: 'closed', stopReason: 'closed', result: 'closed early' })
    expect(record.transcript).to.deep.equal({ v: 1 })
  })

  it('a parked run the stop itself ends (its holder disposes it as the app goes) stays parked and resumes after the restart', async () => {
    const first = await start('held.db')
    const child = await parkedChild(first)
    first.ctx.on('dispose', () => { void child.dispose() })
    await first.stop()

    const second = await start('held.db')
    expect(await second.ctx.checkpoints.load(child.id)).to.include({ state: 'parked' })
    await waitFor(() => second.ctx.subagents.pending().some((run) => run.runId === child.id), 'the parked run listed')
    const before = calls.restore
    expect((await second.ctx.subagents.resume(child.id, 'green')).output).to.equal('got green')
    expect(calls.restore - before, 'one restore').to.equal(1)
  })
})
