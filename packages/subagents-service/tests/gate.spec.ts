/// <reference types="mocha" />
import { expect } from 'chai'
import { SubagentError, type SubagentHandle } from '@cordis-subagents/subagents-service'
import {
  type Harness, FakeProvider, isSettled, recordEvents, rejection, request, setup, tick,
} from './helpers.js'

describe('the per-parent gate (maxConcurrentPerParent)', () => {
  let h: Harness
  let provider: FakeProvider

  beforeEach(async () => {
    h = await setup({ maxConcurrentPerParent: 2 })
    provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
  })
  afterEach(async () => { await h.stop() })

  it('admits 2 at once, queues the rest FIFO and admits them one per released slot', async () => {
    const order: string[] = []
    const starts = ['p1', 'p2', 'p3', 'p4', 'p5'].map((prompt) => {
      const promise = h.ctx.subagents.delegate('alpha', request(h.root, { prompt }))
      promise.then(() => order.push(prompt))
      return promise
    })
    await tick()
    expect(provider.calls.map((call) => call.prompt)).to.deep.equal(['p1', 'p2'])
    const [r1, r2] = await Promise.all(starts.slice(0, 2))
    // A run whose result settled still holds its slot until it is disposed.
    provider.runs[1].complete()
    await r2.result
    await tick()
    expect(provider.calls).to.have.length(2)

    await r2.dispose()
    const r3 = await starts[2]
    expect(provider.calls.map((call) => call.prompt)).to.deep.equal(['p1', 'p2', 'p3'])
    await r1.dispose()
    const r4 = await starts[3]
    expect(await isSettled(starts[4])).to.equal(false)
    await r3.dispose()
    const r5 = await starts[4]
    expect(order).to.deep.equal(['p1', 'p2', 'p3', 'p4', 'p5'])
    expect(provider.calls.map((call) => call.prompt)).to.deep.equal(['p1', 'p2', 'p3', 'p4', 'p5'])
    await r4.dispose()
    await r5.dispose()
  })

  it('abort while queued rejects ABORTED without calling the provider, and leaves the queue', async () => {
    const events = recordEvents(h.ctx)
    const r1 = await h.ctx.subagents.delegate('alpha', request(h.root))
    const r2 = await h.ctx.subagents.delegate('alpha', request(h.root))
    const controller = new AbortController()
    const aborted = h.ctx.subagents.delegate('alpha', request(h.root, { prompt: 'queued-abort', signal: controller.signal }))
    const after = h.ctx.subagents.delegate('alpha', request(h.root, { prompt: 'queued-after' }))
    await tick()
    controller.abort()
    const error = await rejection(aborted)
    expect(error).to.be.instanceOf(SubagentError).with.property('code', 'ABORTED')
    expect(error.message).to.include('waiting for a slot')
    // The aborted waiter took no slot: the next release goes to the one behind it.
    await r1.dispose()
    const r3 = await after
    expect(provider.calls.map((call) => call.prompt)).to.not.include('queued-abort')
    expect(r3.info.runId).to.equal(provider.last.request.runId)
    expect(events.log.filter((line) => line.startsWith('start:'))).to.have.length(3)
    await r2.dispose()
    await r3.dispose()
  })

  it('the gate counts each parent\'s own children only', async () => {
    const other = h.ctx.agents.create({ label: 'other-root' })
    const a1 = await h.ctx.subagents.delegate('alpha', request(h.root))
    const a2 = await h.ctx.subagents.delegate('alpha', request(h.root))
    const a3 = h.ctx.subagents.delegate('alpha', request(h.root))
    const b1 = await h.ctx.subagents.delegate('alpha', request(other))
    expect(await isSettled(a3)).to.equal(false)
    await b1.dispose()
    await a1.dispose()
    await (await a3).dispose()
    await a2.dispose()
  })

  it('nesting cannot deadlock: a child\'s own children do not count against its parent', async () => {
    // The parent's two slots are taken by two children; each child starts two grandchildren.
    const runs: SubagentHandle[] = []
    runs.push(await h.ctx.subagents.delegate('alpha', request(h.root)))
    runs.push(await h.ctx.subagents.delegate('alpha', request(h.root)))
    for (const label of ['c1', 'c2']) {
      const child = h.ctx.agents.create({ parent: h.root, label })
      runs.push(await h.ctx.subagents.delegate('alpha', request(child)))
      runs.push(await h.ctx.subagents.delegate('alpha', request(child)))
    }
    expect(provider.calls.map((call) => call.depth)).to.deep.equal([1, 1, 2, 2, 2, 2])
    for (const run of runs.reverse()) await run.dispose()
  })

  it('a slot is released when provider start rejects, and the queue moves on', async () => {
    const r1 = await h.ctx.subagents.delegate('alpha', request(h.root))
    provider.startError = new Error('no capacity')
    expect(await rejection(h.ctx.subagents.delegate('alpha', request(h.root)))).to.have.property('code', 'PROVIDER_START_FAILED')
    provider.startError = undefined
    // Two slots: r1 and r2; the failed start holds none, so r3 queues behind r2 only.
    const r2 = await h.ctx.subagents.delegate('alpha', request(h.root))
    const r3 = h.ctx.subagents.delegate('alpha', request(h.root))
    expect(await isSettled(r3)).to.equal(false)
    await r1.dispose()
    await (await r3).dispose()
    await r2.dispose()
  })

  it('a start rejected by a pre-check takes no slot', async () => {
    for (let i = 0; i < 5; i++) {
      await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { maxDepth: 0 })))
    }
    const r1 = await h.ctx.subagents.delegate('alpha', request(h.root))
    const r2 = await h.ctx.subagents.delegate('alpha', request(h.root))
    await r1.dispose()
    await r2.dispose()
  })

  it('a provider capability change while queued is re-checked before the provider is called', async () => {
    const r1 = await h.ctx.subagents.delegate('alpha', request(h.root))
    const r2 = await h.ctx.subagents.delegate('alpha', request(h.root))
    const queued = rejection(h.ctx.subagents.delegate('alpha', request(h.root, { persona: 'terse' })))
    await tick()
    provider.capabilities.persona = false
    await r1.dispose()
    const error = await queued
    expect(error).to.have.property('code', 'UNSUPPORTED_CAPABILITY')
    expect(provider.calls).to.have.length(2)
    // Its slot went back.
    const r3 = await h.ctx.subagents.delegate('alpha', request(h.root))
    await r2.dispose()
    await r3.dispose()
  })

  it('stopping the service rejects queued starts with ABORTED; the provider is not called', async () => {
    const r1 = await h.ctx.subagents.delegate('alpha', request(h.root))
    const r2 = await h.ctx.subagents.delegate('alpha', request(h.root))
    const queued = rejection(h.ctx.subagents.delegate('alpha', request(h.root)))
    await tick()
    await h.stop()
    const error = await queued
    expect(error).to.be.instanceOf(SubagentError).with.property('code', 'ABORTED')
    expect(provider.calls).to.have.length(2)
    await r1.dispose()
    await r2.dispose()
  })

  it('a gate with maxConcurrentPerParent 1 serialises one parent\'s children', async () => {
    await h.stop()
    h = await setup({ maxConcurrentPerParent: 1 })
    provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
    const first = await h.ctx.subagents.delegate('alpha', request(h.root))
    const second = h.ctx.subagents.delegate('alpha', request(h.root))
    expect(await isSettled(second)).to.equal(false)
    provider.last.complete()
    await first.result
    await first.dispose()
    await (await second).dispose()
    expect(provider.calls).to.have.length(2)
  })
})
