// A parked child waits no longer after a restart than it would have live: its provider's `maxParkedMs` from the park
// is kept with its stored question (`expiresAt`), and a restarted host ends the stored run `timeout` then (the store's
// compare-and-set, its question cancelled, no longer in `pending()`, a resume refused). Before, a restarted host listed
// it forever and a resume a week later ran it. Racing that end with a resume (fast-check over offsets around the
// deadline): one of the two wins, the child never runs past its deadline and an answer is never lost silently.
// Real Contexts, the real services, provider-spawn and the checkpoints store on SQLite; a scripted model at the far edge.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import type { Context } from 'cordis'
import { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import type { PendingQuestion } from '@cordis-subagents/shared'
import * as Spawn from '@cordis-subagents/provider-spawn'
import type { Host } from './support/host.js'
import { sqliteHost } from './support/sqlite-host.js'
import { eventually } from '@cordis-subagents/test-support'
import { waitFor } from './support/host-process-wait.js'

/** Asks its colour, then paints: `answered` counts the turns that got an answer (the child running after its park). */
function model(answered: { count: number }): ScriptedModel {
  return new ScriptedModel((request: GenerateRequest) => {
    const result = request.messages.find((m) => m.role === 'tool')
    if (!result) return { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] }
    answered.count++
    return { text: `painted ${result.content}` }
  })
}

async function host(file: string, maxParkedMs: number, answered = { count: 0 }): Promise<Host> {
  const h = await sqliteHost(file, 'park-deadline', {
    before(ctx: Context) {
      ctx.agents.registerModel('m', model(answered))
      ctx.plugin(Spawn, { name: 'spawn', askParent: true, maxParkedMs, model: 'm' })
    },
  })
  await h.ctx.subagents.ready('spawn')
  return h
}

describe('durable: a stored parked run ends at its question\'s deadline after a restart', function () {
  this.timeout(120_000)
  let dir: string
  const hosts: Host[] = []

  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'park-deadline-')) })
  afterEach(async () => {
    for (const h of hosts.splice(0)) await h.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  /** Parks a child on the first start and stops it; the run id and the deadline its stored question carries. */
  async function parkAndStop(file: string, maxParkedMs: number): Promise<{ runId: string; expiresAt: number }> {
    const first = await host(file, maxParkedMs)
    hosts.push(first)
    const parent = first.ctx.agents.create({ label: 'root' })
    const parkedAt = Date.now()
    const run = await first.ctx.subagents.delegate('spawn', { prompt: 'paint', parent, signal: new AbortController().signal })
    expect((await run.result).stopReason).to.equal('pending')
    const stored = await eventually(async () => {
      const pending = await first.ctx.checkpoints.questions.pending({ runId: run.id })
      return (await first.ctx.checkpoints.load(run.id))?.state === 'parked' && pending.length === 1 ? pending[0] : undefined
    }, 'the run parked in the store')
    const { expiresAt } = JSON.parse(stored.question) as PendingQuestion
    expect(expiresAt).to.be.a('number').within(parkedAt + maxParkedMs, Date.now() + maxParkedMs)
    await first.stop()
    return { runId: run.id, expiresAt: expiresAt! }
  }

  it('is listed until its deadline, then ends timeout in the store: its question cancelled, a resume refused', async () => {
    const file = join(dir, 'live.db')
    const { runId, expiresAt } = await parkAndStop(file, 1500)
    const answered = { count: 0 }
    const second = await host(file, 1500, answered)
    hosts.push(second)
    await waitFor(() => second.ctx.subagents.pending().some((p) => p.runId === runId), 'the parked run listed')
    await waitFor(async () => (await second.ctx.checkpoints.load(runId))?.state === 'settled', 'the stored run ended', 30_000)
    expect(Date.now()).to.be.at.least(expiresAt)
    expect((await second.ctx.checkpoints.load(runId))!.stopReason).to.equal('timeout')
    expect(await second.ctx.checkpoints.questions.pending({ runId })).to.deep.equal([])
    expect(second.ctx.subagents.pending().map((p) => p.runId)).to.not.include(runId)
    const refused = await second.ctx.subagents.resume(runId, 'blue').then(() => undefined, (error: { code?: string; message: string }) => error)
    expect(refused?.code).to.equal('NOT_PARKED')
    expect(refused?.message).to.include('timeout')
    expect(answered.count).to.equal(0)
  })

  it('one whose deadline passed while the host was down ends at the next start, never listed or resumed', async () => {
    const file = join(dir, 'down.db')
    const { runId, expiresAt } = await parkAndStop(file, 300)
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 50))
    const answered = { count: 0 }
    const second = await host(file, 300, answered)
    hosts.push(second)
    const refused = await second.ctx.subagents.resume(runId, 'blue').then(() => undefined, (error: { code?: string; message: string }) => error)
    expect(refused?.code).to.equal('NOT_PARKED')
    await waitFor(async () => (await second.ctx.checkpoints.load(runId))?.state === 'settled', 'the stored run ended')
    expect((await second.ctx.checkpoints.load(runId))!.stopReason).to.equal('timeout')
    expect(second.ctx.subagents.pending().map((p) => p.runId)).to.not.include(runId)
    expect(answered.count).to.equal(0)
  })

  it('a deadline whose question another start of the host answered since ends nothing: the run parked again is left to it', async () => {
    const file = join(dir, 'moved.db')
    const { runId, expiresAt } = await parkAndStop(file, 1500)
    const second = await host(file, 1500)
    hosts.push(second)
    await waitFor(() => second.ctx.subagents.pending().some((p) => p.runId === runId), 'the parked run listed')
    // What another start of this host on the database does meanwhile: it resumes the run (the store's compare-and-set),
    // answers its question, and the run parks again on a new question with a later deadline.
    const store = second.ctx.checkpoints
    const [asked] = await store.questions.pending({ runId })
    expect(await store.transition(runId, 'parked', 'running')).to.equal(true)
    await store.questions.answer(asked!.id, 'blue')
    const next: PendingQuestion = { id: 'q-next', kind: 'ask', text: 'And the shade?', path: [], expiresAt: Date.now() + 60_000 }
    await store.questions.ask({ id: `${runId}:q-next`, runId, path: runId, question: JSON.stringify(next) })
    expect(await store.transition(runId, 'running', 'parked')).to.equal(true)
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 300))
    await waitFor(() => !second.ctx.subagents.pending().some((p) => p.runId === runId), 'the stale listing dropped')
    expect((await store.load(runId))!.state).to.equal('parked')
    expect((await store.questions.pending({ runId })).map((q) => q.id)).to.deep.equal([`${runId}:q-next`])
  })

  it('a stored deadline that is not a time is no deadline: it neither ends its run nor holds back another run\'s', async () => {
    const file = join(dir, 'damaged.db')
    // A row another writer (or a hand edit) left, older than the good run (so listed before it): parked, its question's
    // deadline a string.
    const first = await host(file, 1500)
    hosts.push(first)
    const damaged = 'run-damaged-deadline'
    await first.ctx.checkpoints.save({ id: damaged, path: `root/${damaged}`, parent: '', provider: 'spawn', state: 'parked' })
    const question = { id: 'q-damaged', kind: 'ask', text: 'Which?', path: [], expiresAt: 'soon' }
    await first.ctx.checkpoints.questions.ask({ id: `${damaged}:q-damaged`, runId: damaged, path: damaged, question: JSON.stringify(question) })
    await first.stop()
    const { runId, expiresAt } = await parkAndStop(file, 1500)
    // The next start lists both; the good run's deadline is still ahead, so its timer is what ends it.
    const third = await host(file, 1500)
    hosts.push(third)
    await waitFor(async () => (await third.ctx.checkpoints.load(runId))?.state === 'settled', 'the good run ended at its deadline')
    expect(Date.now()).to.be.at.least(expiresAt)
    expect((await third.ctx.checkpoints.load(damaged))!.state).to.equal('parked')
    expect(third.ctx.subagents.pending().map((p) => p.runId)).to.include(damaged).and.not.include(runId)
  })

  it('racing a resume around the deadline: one of the two wins, the store agrees, the child never answers twice (fast-check)', async () => {
    let round = 0
    await fc.assert(fc.asyncProperty(fc.integer({ min: -150, max: 150 }), async (offset) => {
      const file = join(dir, `race-${round++}.db`)
      const { runId, expiresAt } = await parkAndStop(file, 600)
      const answered = { count: 0 }
      const second = await host(file, 600, answered)
      hosts.push(second)
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt + offset - Date.now())))
      const calledAt = Date.now()
      const outcome = await second.ctx.subagents.resume(runId, 'blue').then((o) => o, (error: { code?: string }) => error)
      // A resume asked once the question stopped waiting is refused, whether or not the deadline's timer ran yet.
      if (calledAt >= expiresAt) expect(outcome).to.not.have.property('stopReason')
      await waitFor(async () => (await second.ctx.checkpoints.load(runId))?.state === 'settled', 'the stored run ended')
      const stored = (await second.ctx.checkpoints.load(runId))!
      if ('stopReason' in outcome) {
        // The resume won: the child ran once on the answer, and its outcome is the record.
        expect(outcome.stopReason).to.equal('completed')
        expect(outcome.output).to.equal('painted blue')
        expect(stored.stopReason).to.equal('completed')
        expect(answered.count).to.equal(1)
      } else {
        expect(outcome.code).to.equal('NOT_PARKED')
        expect(stored.stopReason).to.equal('timeout')
        expect(answered.count).to.equal(0)
      }
      expect(await second.ctx.checkpoints.questions.pending({ runId })).to.deep.equal([])
      await second.stop()
    }), { numRuns: 6 })
  })
})
