// ctx.subagents with ctx.checkpoints on a real SQLite file: runs are recorded as they park, resume
// and settle; a second host start on the same file lists the parked run, resumes it through the
// provider's restore (never a second start), and continues an interrupted run with a new turn.
// The provider is a fixture at the far edge (it asks one question); everything else is real.
import { strict as assert } from 'node:assert'
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import type { PendingQuestion } from '@cordis-subagents/shared'
import type { ProviderStartRequest, SubagentProvider, SubagentResult, SubagentRun } from '@cordis-subagents/subagents-service'
import type { RunRecord } from '../packages/subagents-service/src/types.js'
import { serviceOf } from '../packages/checkpoints/tests/support.js'
import { type Host, startHost } from './support/host.js'
import { waitFor } from './support/host-process-wait.js'

/** Counts of what the fixture provider was asked to do, across host starts (the same process). */
const calls = { start: 0, restore: 0 }

/** A child that asks one question (prompt "ask"), or never finishes its turn (prompt "hang"). */
function askingProvider(options: { restore?: boolean } = {}): SubagentProvider {
  type State = { answered?: string; inbox?: string[]; restored?: string }
  const run = (id: string, first: Promise<SubagentResult>, state: State): SubagentRun => ({
    id,
    childId: `child-of-${id}`,
    result: first,
    cancel: () => {},
    dispose: async () => {},
    resume: async (answer) => {
      state.answered = answer
      return { stopReason: 'completed', output: `got ${answer}` }
    },
    send: (message) => { (state.inbox ??= []).push(message) },
    wake: async () => ({ stopReason: 'completed', output: `continued (${state.restored}) with ${state.inbox?.join(' / ')}` }),
    checkpoint: () => ({ v: 1, answered: state.answered ?? null }),
  })
  const question = (request: ProviderStartRequest): PendingQuestion => ({ id: `q-${request.runId}`, kind: 'ask', text: 'Which colour?', path: [] })
  return {
    name: 'asker',
    capabilities: { persona: false, toolFilter: false, depthLimit: false },
    inheritsParentContext: false,
    async start(request) {
      calls.start++
      const first = request.prompt === 'hang'
        ? new Promise<SubagentResult>(() => {})
        : request.prompt === 'done'
          ? Promise.resolve<SubagentResult>({ stopReason: 'completed', output: 'done once' })
          : Promise.resolve<SubagentResult>({ stopReason: 'pending', output: '', question: question(request) })
      return run(request.runId, first, {})
    },
    restore: options.restore === false ? undefined : async (record: RunRecord, request) => {
      calls.restore++
      assert.deepEqual(record.checkpoint, { v: 1, answered: null })
      // Like provider-spawn: a restored child waits, parked on its question or idle (interrupted).
      const first = record.state === 'parked'
        ? Promise.resolve<SubagentResult>({ stopReason: 'pending', output: '', question: record.question! })
        : Promise.resolve<SubagentResult>({ stopReason: 'interrupted', output: '' })
      return run(request.runId, first, { restored: record.state })
    },
  }
}

async function durableHost(file: string, options: { restore?: boolean; host?: string; maxList?: number } = {}): Promise<Host> {
  const host = await startHost({
    before(ctx: Context) {
      ctx.plugin(Database as never)
      ctx.plugin(SQLiteDriver, { path: file })
      ctx.plugin(Checkpoints, { host: options.host ?? 'durable-test', ...options.maxList ? { maxList: options.maxList } : {} })
      ctx.plugin({ name: 'asker', apply: (inner: Context) => { inner.subagents.register(askingProvider(options)) } })
    },
  })
  await serviceOf(host.ctx, 'checkpoints')
  return host
}

describe('ctx.subagents with ctx.checkpoints (SQLite): record, restart, restore', function () {
  this.timeout(30_000)
  let dir: string
  const hosts: Host[] = []
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-service-')) })
  afterEach(async () => { for (const host of hosts.splice(0)) await host.stop() })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('a parked run survives a host restart: pending() lists it from the store and resume() restores it (no second start)', async () => {
    const file = join(dir, 'parked.db')
    calls.start = calls.restore = 0
    const first = await durableHost(file)
    hosts.push(first)
    const parent = first.ctx.agents.create({ label: 'root' })
    const handle = await first.ctx.subagents.delegate('asker', { prompt: 'ask', label: 'colour', parent, signal: new AbortController().signal })
    assert.equal((await handle.result).stopReason, 'pending')
    const checkpoints = first.ctx.checkpoints
    await waitFor(async () => (await checkpoints.questions.pending({ runId: handle.id })).length === 1, 'the question stored')
    const parked = (await checkpoints.load(handle.id))!
    assert.equal(parked.state, 'parked')
    assert.equal(parked.label, 'colour')
    assert.equal(parked.path, `${parent.id}/${handle.id}`)
    assert.deepEqual(parked.transcript, { v: 1, answered: null })
    await first.stop()

    const second = await durableHost(file)
    hosts.push(second)
    await waitFor(() => second.ctx.subagents.pending().some((run) => run.runId === handle.id), 'the stored parked run listed')
    const listed = second.ctx.subagents.pending().find((run) => run.runId === handle.id)!
    assert.equal(listed.question.text, 'Which colour?')

    await assert.rejects(second.ctx.subagents.resume(handle.id, ''), { code: 'INVALID_REQUEST' })
    const outcome = await second.ctx.subagents.resume(handle.id, 'blue')
    assert.equal(outcome.stopReason, 'completed')
    assert.equal(outcome.output, 'got blue')
    assert.deepEqual(calls, { start: 1, restore: 1 })
    assert.ok(!second.ctx.subagents.pending().some((run) => run.runId === handle.id))
    await waitFor(async () => (await second.ctx.checkpoints.load(handle.id))?.state === 'settled', 'the run settled in the store')
    const settled = (await second.ctx.checkpoints.load(handle.id))!
    assert.equal(settled.result, 'got blue')
    assert.equal(settled.path, `${parent.id}/${handle.id}`, 'a restored run keeps its stored path')
    assert.equal((await second.ctx.checkpoints.questions.get(`${handle.id}:q-${handle.id}`))!.answer, 'blue')
    await assert.rejects(second.ctx.subagents.resume(handle.id, 'again'), { code: 'NOT_PARKED' })
    await assert.rejects(second.ctx.subagents.resume('run-nobody', 'x'), { code: 'NOT_FOUND' })
  })

  it('a restart lists this host\'s parked runs, however many parked runs other hosts keep on the same database', async () => {
    const file = join(dir, 'shared.db')
    const park = async (host: Host): Promise<string> => {
      const handle = await host.ctx.subagents.delegate('asker', { prompt: 'ask', parent: host.ctx.agents.create(), signal: new AbortController().signal })
      assert.equal((await handle.result).stopReason, 'pending')
      await waitFor(async () => (await host.ctx.checkpoints.questions.pending({ runId: handle.id })).length === 1, 'the question stored')
      return handle.id
    }
    // Another host's parked runs first (the oldest updates, which a listing reads first), then this host's one.
    const other = await durableHost(file, { host: 'other-host' })
    hosts.push(other)
    for (let i = 0; i < 3; i++) await park(other)
    await other.stop()
    const first = await durableHost(file)
    hosts.push(first)
    const mine = await park(first)
    await first.stop()

    // A listing bound below the other host's count: before, those filled it and this host's run was never listed.
    const second = await durableHost(file, { maxList: 2 })
    hosts.push(second)
    await waitFor(() => second.ctx.subagents.pending().length > 0, 'the stored parked run listed')
    assert.deepEqual(second.ctx.subagents.pending().map((run) => run.runId), [mine])
    assert.equal((await second.ctx.subagents.resume(mine, 'green')).output, 'got green')
  })

  it('a run mid-turn when its host went away is interrupted after the restart and resumes with a new turn on the message', async () => {
    const file = join(dir, 'interrupted.db')
    calls.start = calls.restore = 0
    const first = await durableHost(file)
    hosts.push(first)
    const parent = first.ctx.agents.create({ label: 'root' })
    const handle = await first.ctx.subagents.delegate('asker', { prompt: 'hang', parent, signal: new AbortController().signal })
    await waitFor(async () => (await first.ctx.checkpoints.load(handle.id))?.state === 'running', 'the run recorded running')
    await first.stop()

    const second = await durableHost(file)
    hosts.push(second)
    assert.equal(second.ctx.checkpoints.interruptedAtStart, 1)
    assert.equal((await second.ctx.checkpoints.load(handle.id))!.state, 'interrupted')
    const outcome = await second.ctx.subagents.resume(handle.id, 'go on')
    assert.equal(outcome.output, 'continued (interrupted) with go on')
    assert.deepEqual(calls, { start: 1, restore: 1 })
  })

  it('reattach by task key across a restart: a settled task gives its recorded result, a parked one its question, no second start', async () => {
    const file = join(dir, 'reattach.db')
    calls.start = calls.restore = 0
    const first = await durableHost(file)
    hosts.push(first)
    const parent = first.ctx.agents.create({ label: 'root' })
    const signal = new AbortController().signal
    const parked = await first.ctx.subagents.delegate('asker', { prompt: 'ask', parent, signal, reattach: true })
    const done = await first.ctx.subagents.delegate('asker', { prompt: 'done', parent, signal, reattach: true })
    expect((await parked.result).stopReason, 'parked').to.equal('pending')
    expect((await done.result).output).to.equal('done once')
    await done.dispose()
    await waitFor(async () => (await first.ctx.checkpoints.load(parked.id))?.state === 'parked'
      && (await first.ctx.checkpoints.load(done.id))?.state === 'settled', 'both recorded')
    await first.stop()

    const second = await durableHost(file)
    hosts.push(second)
    const again = second.ctx.agents.create({ label: 'root' })
    assert.equal(again.id, parent.id, 'the re-run parent has the same id (the task key names it)')
    const replayed = await second.ctx.subagents.delegate('asker', { prompt: 'done', parent: again, signal, reattach: true })
    assert.equal((await replayed.result).output, 'done once')
    await replayed.dispose()
    const reattached = await second.ctx.subagents.delegate('asker', { prompt: 'ask', parent: again, signal, reattach: true })
    const outcome = await reattached.result
    assert.equal(outcome.stopReason, 'pending')
    assert.equal(outcome.question?.text, 'Which colour?')
    assert.deepEqual(calls, { start: 2, restore: 1 }, 'no second start of either task')
    assert.equal((await reattached.resume('green')).output, 'got green')
    await reattached.dispose()
    assert.equal((await second.ctx.checkpoints.load(parked.id))!.state, 'closed', 'the old record says it was continued')
    const fresh = await second.ctx.subagents.delegate('asker', { prompt: 'done', parent: again, signal })
    assert.equal((await fresh.result).output, 'done once')
    await fresh.dispose()
    assert.equal(calls.start, 3, 'without reattach a task starts a child as before')
  })

  it('a stored run whose provider cannot restore is UNSUPPORTED and stays parked in the store', async () => {
    const file = join(dir, 'unsupported.db')
    const first = await durableHost(file)
    hosts.push(first)
    const handle = await first.ctx.subagents.delegate('asker', { prompt: 'ask', parent: first.ctx.agents.create(), signal: new AbortController().signal })
    await handle.result
    await waitFor(async () => (await first.ctx.checkpoints.load(handle.id))?.state === 'parked', 'the run parked in the store')
    await first.stop()

    const second = await durableHost(file, { restore: false })
    hosts.push(second)
    await assert.rejects(second.ctx.subagents.resume(handle.id, 'blue'), { code: 'UNSUPPORTED' })
    assert.deepEqual(second.ctx.subagents.runs(), [])
    assert.equal((await second.ctx.checkpoints.load(handle.id))!.state, 'parked')
    const later = await second.ctx.subagents.delegate('asker', { prompt: 'done', parent: second.ctx.agents.create(), signal: new AbortController().signal })
    assert.equal((await later.result).output, 'done once', 'the host delegates as before')
    await later.dispose()
  })

  it('without a checkpoints plugin nothing is recorded and a run unknown here is NOT_FOUND', async () => {
    const host = await startHost({ before: (ctx) => { ctx.plugin({ name: 'asker', apply: (inner: Context) => { inner.subagents.register(askingProvider()) } }) } })
    hosts.push(host)
    const parent = host.ctx.agents.create({ label: 'root' })
    const handle = await host.ctx.subagents.delegate('asker', { prompt: 'ask', parent, signal: new AbortController().signal })
    assert.equal((await handle.result).stopReason, 'pending')
    assert.equal(host.ctx.get('checkpoints' as never), undefined)
    await assert.rejects(host.ctx.subagents.resume('run-elsewhere', 'x'), { code: 'NOT_FOUND' })
    assert.equal((await host.ctx.subagents.resume(handle.id, 'red')).output, 'got red')
    await handle.dispose()
  })
})
