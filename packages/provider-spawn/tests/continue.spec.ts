import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { expect } from 'chai'
import { type Agent, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import { createInProcessProvider } from '@cordis-subagents/provider-spawn'
import type { SubagentHandle } from '@cordis-subagents/subagents-service'
import { type Harness, setup } from './helpers.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const users = (request: GenerateRequest) => request.messages.filter((m) => m.role === 'user').map((m) => m.content)

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise
    return undefined
  } catch (error) {
    return (error as { code?: string }).code
  }
}

/**
 * Issue 38, item 10: a finished spawn / fork child can be continued (`ctx.subagents.continue`): a
 * new turn on its transcript, asked for explicitly, under the same run id, with events and bounds.
 */
describe('in-process provider: continuing a child whose run ended', () => {
  let h: Harness
  let seen: string[][]

  beforeEach(async () => {
    seen = []
    h = await setup({ models: { m: new ScriptedModel([{ text: 'unused' }]) } })
    h.ctx.agents.registerModel('child', new ScriptedModel((request) => {
      seen.push(users(request))
      return { text: `answer ${seen.length}` }
    }))
  })
  afterEach(async () => { await h.ctx.stop() })

  function parentAgent(options: { budget?: { maxChildren: number } } = {}): Agent {
    return h.ctx.agents.create({ model: 'child', ...options })
  }

  async function finished(provider: string, parent: Agent): Promise<SubagentHandle> {
    const run = await h.ctx.subagents.delegate(provider, { prompt: 'write the report', parent, signal: new AbortController().signal })
    expect((await run.result).stopReason).to.equal('completed')
    await run.dispose()
    return run
  }

  for (const inheritsParentContext of [false, true]) {
    const name = inheritsParentContext ? 'fork' : 'spawn'
    it(`${name}: a new turn on its transcript, under the same run id, with start/end events and its new outcome`, async () => {
      h.ctx.subagents.register(createInProcessProvider(h.ctx, { name, inheritsParentContext }))
      const parent = parentAgent()
      const first = await finished(name, parent)
      expect(h.ctx.subagents.continuable.list(parent).map((run) => run.runId)).to.deep.equal([first.id])

      const next = await h.ctx.subagents.continue(first.id, 'now add a summary')
      expect(next.id).to.equal(first.id)
      const outcome = await next.result
      expect(outcome).to.deep.include({ stopReason: 'completed', output: 'answer 2' })
      await next.dispose()
      // The child saw its whole transcript: its task, its answer (as the assistant's), and the follow-up.
      expect(seen).to.deep.equal([['write the report'], ['write the report', 'now add a summary']])
      expect(h.starts.map((info) => info.runId)).to.deep.equal([first.id, first.id])
      expect(h.ends.map(({ info, result }) => [info.runId, result.output])).to.deep.equal([[first.id, 'answer 1'], [first.id, 'answer 2']])
      // The first turn stays settled: its result is what it was; the continue is a turn of its own.
      expect((await first.result).output).to.equal('answer 1')
      // And it can be continued again.
      const third = await h.ctx.subagents.continue(first.id, 'and a title')
      expect((await third.result).output).to.equal('answer 3')
      await third.dispose()
      expect(seen[2]).to.deep.equal(['write the report', 'now add a summary', 'and a title'])
    })
  }

  it('only the parent that delegated it finds it (scoped); a run not ended, or unknown, is refused with a code', async () => {
    h.ctx.subagents.register(createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false }))
    const parent = parentAgent()
    const first = await finished('spawn', parent)
    expect(await codeOf(h.ctx.subagents.continue(first.id, 'more', { parent: parentAgent() }))).to.equal('NOT_FOUND')
    expect(h.ctx.subagents.continuable.list(parentAgent())).to.deep.equal([])
    expect(await codeOf(h.ctx.subagents.continue('run-unknown', 'more'))).to.equal('NOT_FOUND')
    expect(await codeOf(h.ctx.subagents.continue(first.id, '  '))).to.equal('INVALID_REQUEST')
    // Its parent may: the new turn is that parent's delegation.
    const next = await h.ctx.subagents.continue(first.id, 'more', { parent })
    expect(await codeOf(h.ctx.subagents.continue(first.id, 'again'))).to.equal('NOT_SETTLED')
    expect((await next.result).stopReason).to.equal('completed')
    await next.dispose()
  })

  it('a continue is charged to the parent\'s budget as a delegation: past it, BUDGET_EXCEEDED and nothing runs', async () => {
    h.ctx.subagents.register(createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false }))
    const parent = parentAgent({ budget: { maxChildren: 1 } })
    const first = await finished('spawn', parent)
    expect(await codeOf(h.ctx.subagents.continue(first.id, 'more', { parent }))).to.equal('BUDGET_EXCEEDED')
    expect(seen).to.have.length(1)
    // Refused before anything started: it is still continuable (by another parent's budget, as the host).
    expect(h.ctx.subagents.continuable.list(parent).map((run) => run.runId)).to.deep.equal([first.id])
  })

  it('a run stays continuable for CONTINUE_WINDOW_MS after it ended, and the service keeps at most MAX_CONTINUABLE_RUNS', async () => {
    const { CONTINUE_WINDOW_MS, MAX_CONTINUABLE_RUNS } = await import('@cordis-subagents/subagents-service')
    h.ctx.subagents.register(createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false }))
    const parent = parentAgent()
    const run = await h.ctx.subagents.delegate('spawn', { prompt: 'write the report', parent, signal: new AbortController().signal })
    const outcome = await run.result
    // As if it had ended a window ago (the book is told the end time; no clock is waited on).
    h.ctx.subagents.continuable.ended(h.ctx.subagents.run(run.id) as never, outcome, Date.now() - CONTINUE_WINDOW_MS)
    await run.dispose()
    expect(h.ctx.subagents.continuable.list()).to.deep.equal([])
    expect(await codeOf(h.ctx.subagents.continue(run.id, 'more'))).to.equal('NOT_FOUND')

    const ids: string[] = []
    for (let i = 0; i <= MAX_CONTINUABLE_RUNS; i++) ids.push((await finished('spawn', parentAgent({ budget: { maxChildren: 1 } }))).id)
    const kept = h.ctx.subagents.continuable.list().map((entry) => entry.runId)
    expect(kept).to.have.length(MAX_CONTINUABLE_RUNS)
    expect(kept, 'the one that ended first is dropped').to.deep.equal(ids.slice(1))
    expect(await codeOf(h.ctx.subagents.continue(ids[0], 'more'))).to.equal('NOT_FOUND')
  })

  it('a run kept for continue lets go of its ended delegation (the handle, its callbacks and its signal) and still continues', async () => {
    h.ctx.subagents.register(createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false }))
    const parent = parentAgent()
    // In a function of its own, so no local of this test keeps the handle.
    const kept = async () => {
      const run = await finished('spawn', parent)
      return { id: run.id, handle: new WeakRef(run) }
    }
    const { id, handle } = await kept()
    expect(h.ctx.subagents.continuable.list(parent).map((entry) => entry.runId)).to.deep.equal([id])
    for (let i = 0; i < 5 && handle.deref(); i++) {
      await new Promise((resolve) => setImmediate(resolve))
      gc()
    }
    expect(handle.deref(), 'the ended delegation is collectable while its run is kept for continue').to.equal(undefined)
    const next = await h.ctx.subagents.continue(id, 'now add a summary')
    expect(await next.result).to.deep.include({ stopReason: 'completed', output: 'answer 2' })
    await next.dispose()
  })

  it('a run kept for continue holds neither its child agent nor a parent that was disposed; it still continues, under a fresh parent', async () => {
    h.ctx.subagents.register(createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false }))
    let child: Agent | undefined
    const stop = h.ctx.agents.observe({ runStart: (agent) => { if (agent.parent) child = agent } })
    // In a function of its own, so no local of this test keeps either agent.
    const kept = async () => {
      const parent = parentAgent()
      const run = await finished('spawn', parent)
      const refs = { id: run.id, child: new WeakRef(child!), parent: new WeakRef(parent) }
      child = undefined
      await parent.dispose()
      return refs
    }
    const { id, child: childRef, parent: parentRef } = await kept()
    stop()
    expect(h.ctx.subagents.continuable.list().map((entry) => entry.runId)).to.deep.equal([id])
    for (let i = 0; i < 5 && (childRef.deref() || parentRef.deref()); i++) {
      await new Promise((resolve) => setImmediate(resolve))
      gc()
    }
    expect(childRef.deref(), 'the ended child agent is collectable while its run is kept').to.equal(undefined)
    expect(parentRef.deref(), 'the disposed parent is collectable while its child\'s run is kept').to.equal(undefined)
    const next = await h.ctx.subagents.continue(id, 'now add a summary')
    expect(await next.result).to.deep.include({ stopReason: 'completed', output: 'answer 2' })
    await next.dispose()
    expect(seen[1]).to.deep.equal(['write the report', 'now add a summary'])
  })

  it('a parent that lives on is held by its kept runs, and watched once per kept run: a run that leaves the book stops watching it', async () => {
    h.ctx.subagents.register(createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false }))
    const parent = parentAgent()
    const lifetime = (parent as unknown as { lifetime: { first?: unknown; more?: Set<unknown> } }).lifetime
    const watching = () => (lifetime.first ? 1 : 0) + (lifetime.more?.size ?? 0)
    const ids: string[] = []
    for (let i = 0; i < 3; i++) ids.push((await finished('spawn', parent)).id)
    expect(watching()).to.equal(3)
    // A continue takes the run out of the book while its new turn runs (and puts it back when the turn ends).
    const next = await h.ctx.subagents.continue(ids[0], 'more', { parent })
    expect(watching()).to.equal(2)
    await next.result
    await next.dispose()
    expect(watching()).to.equal(3)
    expect(h.ctx.subagents.continuable.list(parent).map((entry) => entry.runId)).to.have.members(ids)
    await parent.dispose()
    expect(watching()).to.equal(0)
    expect(h.ctx.subagents.continuable.list(parent), 'a disposed parent is no longer any run\'s').to.deep.equal([])
  })

  it('a run takes at most MAX_CONTINUES_PER_RUN continues (CONTINUE_LIMIT)', async () => {
    const { MAX_CONTINUES_PER_RUN } = await import('@cordis-subagents/subagents-service')
    h.ctx.subagents.register(createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false }))
    const parent = parentAgent()
    const first = await finished('spawn', parent)
    // Its parent is gone: each continue is the delegation of a fresh root agent (its budget renewed), so only the cap stops them.
    await parent.dispose()
    for (let i = 0; i < MAX_CONTINUES_PER_RUN; i++) {
      const next = await h.ctx.subagents.continue(first.id, `more ${i}`)
      await next.result
      await next.dispose()
    }
    expect(await codeOf(h.ctx.subagents.continue(first.id, 'one more'))).to.equal('CONTINUE_LIMIT')
    expect(seen).to.have.length(MAX_CONTINUES_PER_RUN + 1)
  })
})
