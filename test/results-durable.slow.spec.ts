// Results are re-readable across a host restart (issue 38, item 11): with ctx.checkpoints on a real
// SQLite file and on a real PostgreSQL (CHECKPOINTS_PG_URL; the test run starts one), a run that
// ended before the restart reads again from the store, through ctx.subagents.result(runId) and
// through the parent's subagent_result; its output is as long as the store keeps (maxTextBytes)
// and says so. Nothing is re-run. ScriptedModel at the edge only.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { z } from 'zod'
import { type Agent, type GenerateRequest, type Message, ScriptedModel } from '@cordis-subagents/agent'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { freshPostgres, PG_URL, serviceOf } from '../packages/checkpoints/tests/support.js'
import { type Host, startHost } from './support/host.js'
import { waitFor } from './support/host-process-wait.js'

const LONG = Array.from({ length: 100 }, (_, i) => `finding ${String(i).padStart(3, '0')}: é 😀 details\n`).join('')
const MAX_TEXT = 1024

async function rejection(promise: Promise<unknown>): Promise<any> {
  return promise.then(() => { throw new Error('expected a rejection') }, (error) => error)
}

/** A child model: asks its parent when told to, else answers with LONG (or a short line). Counts its calls. */
function childModel(): ScriptedModel {
  const said = (request: GenerateRequest, text: string) => request.messages.some((m: Message) => m.role === 'user' && String(m.content).includes(text))
  return new ScriptedModel((request) => said(request, 'Ask')
    ? { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] }
    : { text: said(request, 'Short') ? 'short and whole' : LONG })
}

/** A SQLite file's path, or undefined for the PostgreSQL at PG_URL. */
async function durableHost(file: string | undefined, child: ScriptedModel): Promise<Host> {
  const host = await startHost({
    before(ctx: Context) {
      ctx.plugin(Database as never)
      if (file) ctx.plugin(SQLiteDriver, { path: file })
      else ctx.plugin(PostgresDriver as never, { url: PG_URL })
      ctx.plugin(Checkpoints, { host: 'results-test', maxTextBytes: MAX_TEXT })
      ctx.agents.registerModel('child', child)
      ctx.plugin(Spawn as never, { name: 'spawn', askParent: true })
      ctx.plugin(SubagentControl as never, {})
    },
  })
  await serviceOf(host.ctx, 'checkpoints')
  return host
}

for (const backend of ['sqlite', 'postgres'] as const) describe(`results re-read across a host restart (ctx.checkpoints on ${backend})`, function () {
  this.timeout(30_000)
  let dir: string
  const hosts: Host[] = []
  /** The store of one test: a fresh SQLite file, or the PostgreSQL with its tables dropped. */
  const storeFor = (name: string) => backend === 'sqlite' ? join(dir, name) : undefined
  before(() => { dir = mkdtempSync(join(tmpdir(), 'results-durable-')) })
  beforeEach(async () => { if (backend === 'postgres') await freshPostgres() })
  afterEach(async () => { for (const host of hosts.splice(0)) await host.stop() })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('an ended run reads again from the store after a restart, capped at maxTextBytes and saying so; nothing runs again', async () => {
    const file = storeFor('results.db')
    const first = await durableHost(file, childModel())
    hosts.push(first)
    const parent = first.ctx.agents.create({ label: 'root' })
    const signal = new AbortController().signal
    const delegate = (host: Host, prompt: string) => host.ctx.subagents.delegate('spawn', { prompt, label: prompt, parent, signal, agentOptions: { model: 'child' } })
    const long = await delegate(first, 'Report in full.')
    const short = await delegate(first, 'Short report.')
    const asking = await delegate(first, 'Ask first.')
    expect((await long.result).output).to.equal(LONG)
    expect((await asking.result).stopReason).to.equal('pending')
    await Promise.all([long.dispose(), short.dispose()])
    expect(await first.ctx.subagents.result(long.id)).to.include({ output: LONG, source: 'memory', truncated: false })
    const store = first.ctx.checkpoints
    await waitFor(async () => (await store.load(long.id))?.state === 'settled' && (await store.load(short.id))?.state === 'settled'
      && (await store.load(asking.id))?.state === 'parked', 'the runs recorded')
    await first.stop()

    const child = childModel()
    const second = await durableHost(file, child)
    hosts.push(second)
    const kept = await second.ctx.subagents.result(long.id)
    expect(kept).to.include({ runId: long.id, provider: 'spawn', parentId: parent.id, label: 'Report in full.', stopReason: 'completed', status: 'done', source: 'store', truncated: true })
    expect(Buffer.byteLength(kept.output)).to.be.within(MAX_TEXT - 3, MAX_TEXT)
    expect(LONG.startsWith(kept.output)).to.equal(true)
    expect(kept.work.steps).to.equal(1)
    expect(await second.ctx.subagents.result(short.id)).to.include({ output: 'short and whole', source: 'store', truncated: false })
    const parked = await rejection(second.ctx.subagents.result(asking.id))
    expect(parked).to.include({ code: 'NOT_ENDED' })
    expect(parked.message).to.match(/is parked \(in the checkpoint store\)/)
    expect(await rejection(second.ctx.subagents.result('run-none'))).to.include({ code: 'NOT_FOUND' })
    expect(child.callCount, 'reading re-ran nothing').to.equal(0)
    expect(second.ctx.subagents.runs()).to.deep.equal([])

    // The parent (the same agent id after the restart) reads it with its verb; another agent cannot.
    const again = second.ctx.agents.create({ label: 'root' })
    expect(again.id).to.equal(parent.id)
    const exec = (agent: { id: string }) => ({ signal, agent: agent as never, toolCallId: 'c' })
    const page = await again.tools.execute({ name: 'subagent_result', input: { handle: long.id } }, exec(again))
    expect(page.isError).to.equal(undefined)
    expect(page.content).to.contain(`Its output is ${Buffer.byteLength(kept.output)} bytes; this is bytes 0 to ${Buffer.byteLength(kept.output)}.`)
    expect(page.content).to.contain(kept.output)
    expect(page.content).to.match(/\[End of what is kept: the output was cut where it was stored .*\]$/)
    const stranger = second.ctx.agents.create({ label: 'stranger' })
    const refused = await stranger.tools.execute({ name: 'subagent_result', input: { handle: long.id } }, exec(stranger))
    expect(refused).to.include({ isError: true })
    expect(refused.content).to.match(/^You have no ended subagent/)
    expect(child.callCount).to.equal(0)
  })

  it('a grandchild\'s stored result belongs to the child that started it: only that agent\'s verb reads it after a restart', async () => {
    const file = storeFor('nested.db')
    const first = await durableHost(file, childModel())
    hosts.push(first)
    // The child delegates in a tool call of its own: its agent is the grandchild's parent.
    let middle: Agent | undefined
    let nestedId = ''
    first.ctx.tools.register({
      name: 'delegate_here', description: 'delegates one task', input: z.strictObject({}),
      execute: async (_input, exec) => {
        middle = exec.agent as Agent
        const run = await first.ctx.subagents.delegate('spawn', {
          prompt: 'Short report.', parent: middle, signal: exec.signal, agentOptions: { model: 'child' },
        })
        nestedId = run.id
        const outcome = await run.result
        await run.dispose()
        return { content: outcome.output }
      },
    })
    first.ctx.agents.registerModel('middle', new ScriptedModel([{ toolCalls: [{ name: 'delegate_here', input: {} }] }, { text: 'relayed' }]))
    const root = first.ctx.agents.create({ label: 'root' })
    const outer = await first.ctx.subagents.delegate('spawn', { prompt: 'Delegate it.', parent: root, signal: new AbortController().signal, agentOptions: { model: 'middle' } })
    expect((await outer.result).output).to.equal('relayed')
    await outer.dispose()
    const store = first.ctx.checkpoints
    await waitFor(async () => (await store.load(nestedId))?.state === 'settled' && (await store.load(outer.id))?.state === 'settled', 'both recorded')
    expect((await store.load(nestedId))!.parent, 'stored under its parent run').to.equal(outer.id)
    await first.stop()

    const second = await durableHost(file, childModel())
    hosts.push(second)
    const kept = await second.ctx.subagents.result(nestedId)
    expect(kept).to.include({ output: 'short and whole', parentId: middle!.id, source: 'store' })
    expect((await second.ctx.subagents.result(outer.id)).parentId).to.equal(root.id)
    const exec = (agent: { id: string }) => ({ signal: new AbortController().signal, agent: agent as never, toolCallId: 'c' })
    const rootAgain = second.ctx.agents.create({ label: 'root' })
    const refused = await rootAgain.tools.execute({ name: 'subagent_result', input: { handle: nestedId } }, exec(rootAgain))
    expect(refused.content, 'the root did not start the grandchild').to.match(/^You have no ended subagent/)
    const own = await rootAgain.tools.execute({ name: 'subagent_result', input: { handle: outer.id } }, exec(rootAgain))
    expect(own.content).to.match(/ended completed[\s\S]*relayed[\s\S]*\[End of the output\.\]$/)
  })
})
