// Issue 38, item 8: a parked in-process child whose question waits `maxParkedMs` ends at once, as
// `timeout`: `subagent/end` fires, the journal's settled record cancels the question in the store
// (a real SQLite file), `pending()` no longer lists it, and a waiter on the run gets the result.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as Fork from '@cordis-subagents/provider-fork'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { z } from 'zod'
import type { SubagentOutcome, SubagentRunInfo } from '@cordis-subagents/subagents-service'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { freshPostgres, PG_URL, serviceOf } from '../packages/checkpoints/tests/support.js'
import { type Host, startHost } from './support/host.js'
import { waitFor } from './support/host-process-wait.js'

const hasTool = (request: GenerateRequest) => request.messages.some((message) => message.role === 'tool')
const asker = () => new ScriptedModel((request) => hasTool(request)
  ? { text: 'answered' }
  : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] })

/** The next `subagent/end` of run `runId`. */
function endOf(host: Host, runId: () => string): Promise<{ info: SubagentRunInfo; outcome: SubagentOutcome }> {
  return new Promise((resolve) => {
    host.ctx.on('subagent/end', (info, outcome) => { if (info.runId === runId()) resolve({ info, outcome }) })
  })
}

describe('maxParkedMs of spawn and fork: an unanswered question ends the run at once', function () {
  this.timeout(30_000)
  let dir: string
  let host: Host | undefined
  before(() => { dir = mkdtempSync(join(tmpdir(), 'park-expiry-')) })
  afterEach(async () => { await host?.stop(); host = undefined })
  after(() => rmSync(dir, { recursive: true, force: true }))

  for (const store of ['SQLite', 'PostgreSQL'] as const) {
    it(`spawn on ${store}: subagent/end (timeout) fires, the store cancels the question, pending() drops it, waiters get it`, async () => {
      if (store === 'PostgreSQL') await freshPostgres()
      host = await startHost({
        before(ctx: Context) {
          ctx.plugin(Database as never)
          if (store === 'SQLite') ctx.plugin(SQLiteDriver, { path: join(dir, 'expiry.db') })
          else ctx.plugin(PostgresDriver as never, { url: PG_URL })
          ctx.plugin(Checkpoints, { host: 'expiry-test' })
        },
      })
      await expiresOnStore(host)
    })
  }

  async function expiresOnStore(app: Host) {
    await serviceOf(app.ctx, 'checkpoints')
    const { ctx } = app
    ctx.agents.registerModel('child', asker())
    ctx.plugin(Spawn as never, { name: 'spawn', askParent: true, maxParkedMs: 100 })
    await ctx.lifecycle.flush()
    let id = ''
    const ended = endOf(app, () => id)
    // What pending() lists is read when the child parks: read after the await, a loaded machine may be past maxParkedMs.
    const listedAtPark: string[][] = []
    ctx.on('subagent/pending', () => { listedAtPark.push(ctx.subagents.pending().map((parked) => parked.runId)) })
    const run = await ctx.subagents.delegate('spawn', {
      prompt: 'Pick a colour.', parent: ctx.agents.create({ label: 'host' }), signal: new AbortController().signal, agentOptions: { model: 'child' },
    })
    id = run.id
    const first = await run.result
    expect(first.stopReason).to.equal('pending')
    const question = first.question!
    expect(listedAtPark).to.deep.equal([[run.id]])
    const storedQuestion = `${run.id}:${question.id}`

    // Nobody answers and nobody calls resume: the end comes by itself.
    const { outcome } = await ended
    expect(outcome.stopReason).to.equal('timeout')
    expect(outcome.diagnostic).to.match(/^The child waited maxParkedMs \(100 ms\) for an answer to its question "Which colour\?"/)
    expect(outcome.diagnostic).to.include('raise maxParkedMs of the "spawn" provider')
    expect(run.state).to.equal('ended')
    expect(ctx.subagents.pending()).to.deep.equal([])
    expect(await run.current()).to.equal(outcome)
    await waitFor(async () => (await ctx.checkpoints.load(run.id))?.stopReason === 'timeout', 'the run settled timeout in the store')
    expect((await ctx.checkpoints.load(run.id))!.state).to.equal('settled')
    // Stored when it parked (the journal writes a run's states in order), cancelled when it expired.
    await waitFor(async () => (await ctx.checkpoints.questions.get(storedQuestion))?.state === 'cancelled', 'the question cancelled in the store')
    // A late answer is refused: the run ended.
    expect(() => run.resume('blue')).to.throw().with.property('code', 'NOT_PARKED')
    await run.dispose()
  }

  it('fork: the same bound; an answer in time clears it (the run completes, no timeout later)', async () => {
    host = await startHost()
    const { ctx } = host
    ctx.agents.registerModel('child', asker())
    ctx.plugin(Fork as never, { name: 'fork', askParent: true, maxParkedMs: 100 })
    await ctx.lifecycle.flush()
    const parent = ctx.agents.create({ label: 'host' })
    const ends: string[] = []
    ctx.on('subagent/end', (_info, outcome) => { ends.push(outcome.stopReason) })
    const answered = await ctx.subagents.delegate('fork', { prompt: 'Pick one.', parent, signal: new AbortController().signal, agentOptions: { model: 'child' } })
    expect((await answered.result).stopReason).to.equal('pending')
    expect((await answered.resume('blue')).stopReason).to.equal('completed')
    await answered.dispose()

    let id = ''
    const ended = endOf(host, () => id)
    const left = await ctx.subagents.delegate('fork', { prompt: 'Pick two.', parent, signal: new AbortController().signal, agentOptions: { model: 'child' } })
    id = left.id
    expect((await left.result).stopReason).to.equal('pending')
    expect((await ended).outcome.stopReason).to.equal('timeout')
    await left.dispose()
    // The answered run's timer was cleared: it ended once, completed.
    expect(ends).to.deep.equal(['completed', 'timeout'])
  })

  it('the waiting parent (questions: answer) learns it: a note in its inbox, read before its next model call', async () => {
    host = await startHost()
    const { ctx } = host
    ctx.agents.registerModel('child', asker())
    let ended = false
    ctx.on('subagent/end', () => { ended = true })
    // The parent's model delegates, reads the question, then works on (a tool that returns once the
    // child ended and its parked book let it go, i.e. after the note was posted).
    ctx.tools.register({
      name: 'work_on', description: 'other work', input: z.strictObject({}),
      execute: async () => {
        await waitFor(() => ended && !ctx.subagents.runs().length, 'the child ended and disposed')
        return { content: 'worked' }
      },
    })
    let last: GenerateRequest | undefined
    ctx.agents.registerModel('lead', new ScriptedModel((request, index) => {
      if (index === 0) return { toolCalls: [{ name: 'subagent', input: { description: 'colour', prompt: 'Pick a colour.' } }] }
      if (index === 1) return { toolCalls: [{ name: 'work_on', input: {} }] }
      last = request
      return { text: 'noted' }
    }))
    ctx.plugin(Spawn as never, { name: 'spawn', askParent: true, maxParkedMs: 100 })
    ctx.plugin(SubagentTool as never, { provider: 'spawn', agentOptions: { model: 'child' } })
    ctx.plugin(SubagentControl as never, {})
    await ctx.lifecycle.flush()
    const lead = ctx.agents.create({ model: 'lead' })
    const result = await lead.run('Get a colour picked.')
    expect(result.stopReason).to.equal('completed')
    expect(ended).to.equal(true)
    // Read before the model call after the expiry (the second or the third, as the timer fell).
    const notes = last!.messages.filter((message) => message.role === 'user' && String(message.content).startsWith('Subagent run-'))
    expect(notes).to.have.length(1)
    expect(String(notes[0].content)).to.match(/^Subagent run-\S+ \("colour"\) ended timeout while it waited for your answer; it takes no answer any more\. The child waited maxParkedMs/)
    expect(ctx.subagents.runs()).to.deep.equal([])
  })
})
