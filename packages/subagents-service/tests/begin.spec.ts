/// <reference types="mocha" />
import { expect } from 'chai'
import { abortWaiters, LimitError } from '@cordis-subagents/shared'
import { SubagentError } from '@cordis-subagents/subagents-service'
import { type Harness, FakeProvider, deferred, recordEvents, rejection, request, setup, tick } from './helpers.js'

describe('ctx.subagents.begin: delegate with a cancel that works from the start', () => {
  let h: Harness
  let provider: FakeProvider

  beforeEach(async () => {
    h = await setup({ maxConcurrentPerParent: 1 })
    provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
  })
  afterEach(async () => { await h.stop() })

  it('hands over the same run delegate would; cancel after the hand-over cancels the run (a string: aborted)', async () => {
    const started = h.ctx.subagents.begin('alpha', request(h.root))
    const run = await started.handle
    expect(run.id).to.equal(provider.last.request.runId)
    started.cancel('the person said stop')
    expect(provider.last.request.signal.aborted).to.equal(true)
    expect(provider.last.cancels).to.deep.equal(['the person said stop'])
    expect((await run.result).stopReason).to.equal('aborted')
    started.cancel('again')
    expect(provider.last.cancels).to.have.length(1)
    await run.dispose()
  })

  it('works detached (admission\'s own begin, bound): the start, its refusal and a side road (reattach) as through ctx.subagents', async () => {
    const { begin } = h.ctx.subagents
    const started = begin('alpha', request(h.root))
    const run = await started.handle
    expect(run.id).to.equal(provider.last.request.runId)
    expect(await rejection(begin('no-such-provider', request(h.root)).handle)).to.include({ code: 'NO_PROVIDER' })
    provider.last.complete('done')
    expect(await run.result).to.include({ stopReason: 'completed', output: 'done' })
    await run.dispose()
    const first = begin('alpha', { ...request(h.root), reattach: true })
    const second = begin('alpha', { ...request(h.root), reattach: true })
    const held = await first.handle
    expect((await second.handle).id, 'the second holder attaches to the run the key names').to.equal(held.id)
    expect(provider.runs).to.have.length(2)
    provider.last.complete('again')
    await held.dispose()
  })

  it('is one run object: begin returns it, its handle fulfils with it, and its info is what the events and runs() see', async () => {
    const events: unknown[] = []
    h.ctx.on('subagent/start', (info) => events.push(info))
    const started = h.ctx.subagents.begin('alpha', request(h.root))
    const run = await started.handle
    expect(run).to.equal(started)
    expect(run.info.runId).to.equal(run.id)
    expect(events).to.deep.equal([run.info])
    expect(h.ctx.subagents.runs()).to.deep.equal([run.info])
    // A handle's cancel takes a LimitError as the start's does: the run ends as that limit.
    run.cancel(new LimitError('TIMEOUT', 'the caller\'s timeout elapsed') as unknown as string)
    expect((await run.result).stopReason).to.equal('timeout')
    await run.dispose()
    expect(h.ctx.subagents.runs()).to.deep.equal([])
  })

  it('ctx.subagents.cancel(runId) cancels one live run as its holder would; false for a run that is not live', async () => {
    const other = h.ctx.agents.create() // another parent: this harness gives each parent one slot
    const first = await h.ctx.subagents.delegate('alpha', request(h.root))
    const second = await h.ctx.subagents.delegate('alpha', request(other))
    expect(h.ctx.subagents.cancel(first.id, 'from the live view')).to.equal(true)
    expect(provider.runs[0].cancels).to.deep.equal(['from the live view'])
    expect(await first.result).to.include({ stopReason: 'aborted' })
    expect(provider.runs[1].cancels, 'the other run goes on').to.have.length(0)
    expect(h.ctx.subagents.runs().map((info) => info.runId), 'the holder still disposes it').to.deep.equal([first.id, second.id])
    await first.dispose()
    expect(h.ctx.subagents.cancel(first.id)).to.equal(false)
    expect(h.ctx.subagents.cancel('no-such-run')).to.equal(false)
    provider.runs[1].complete('done')
    expect(await second.result).to.include({ stopReason: 'completed' })
    await second.dispose()
    await other.dispose()
  })

  it('dispose before the hand-over cancels the start: the handle rejects ABORTED, the provider\'s late run is stopped', async () => {
    provider.hold = deferred<void>()
    const started = h.ctx.subagents.begin('alpha', request(h.root))
    await tick()
    expect(provider.calls).to.have.length(1)
    await (started as unknown as { dispose(): Promise<void> }).dispose()
    const error = await rejection(started.handle)
    expect(error).to.be.instanceOf(SubagentError).with.property('code', 'ABORTED')
    // The provider was called: it may have started something (a remote task), so the message does not say nothing was.
    expect(error.message).to.include('before the provider handed the run over').and.include('whatever it started is cancelled')
    expect(error.message).to.not.include('no child was started')
    provider.hold.resolve()
    await tick()
    expect(provider.last.disposeCalls).to.equal(1)
    expect(h.ctx.subagents.runs()).to.deep.equal([])
  })

  it('cancel with a LimitError ends the run as that limit, with the error as the provider signal\'s reason', async () => {
    const started = h.ctx.subagents.begin('alpha', request(h.root))
    const run = await started.handle
    const limit = new LimitError('TIMEOUT', 'the tool\'s timeout of 5 ms elapsed')
    started.cancel(limit)
    expect(provider.last.request.signal.reason).to.equal(limit)
    expect(provider.last.cancels[0]).to.include('timeout of 5 ms elapsed')
    expect((await run.result).stopReason).to.equal('timeout')
    await run.dispose()
  })

  it('cancel while the start waits for a slot rejects ABORTED, calls no provider and frees its place in the queue', async () => {
    const events = recordEvents(h.ctx)
    const first = await h.ctx.subagents.delegate('alpha', request(h.root))
    const queued = h.ctx.subagents.begin('alpha', request(h.root, { prompt: 'queued' }))
    const behind = h.ctx.subagents.delegate('alpha', request(h.root, { prompt: 'behind' }))
    await tick()
    queued.cancel(new LimitError('TIMEOUT', 'the tool\'s timeout of 5 ms elapsed'))
    const error = await rejection(queued.handle)
    expect(error).to.be.instanceOf(SubagentError).with.property('code', 'ABORTED')
    expect(error.message).to.include('waiting for a slot')
    await first.dispose()
    const next = await behind
    expect(provider.calls.map((call) => call.prompt)).to.not.include('queued')
    expect(events.log.filter((line) => line.startsWith('start:'))).to.have.length(2)
    await next.dispose()
  })

  it('a start that waits for a slot makes its run once the slot frees; its cancel is then the run\'s', async () => {
    const first = await h.ctx.subagents.delegate('alpha', request(h.root))
    const queued = h.ctx.subagents.begin('alpha', request(h.root, { prompt: 'queued' }))
    await tick()
    expect(provider.calls, 'no provider call while it waits').to.have.length(1)
    await first.dispose()
    const run = await queued.handle
    expect(provider.calls.map((call) => call.prompt)).to.include('queued')
    expect(run.id).to.equal(provider.last.request.runId)
    queued.cancel('the person said stop')
    expect(provider.last.cancels).to.deep.equal(['the person said stop'])
    expect((await run.result).stopReason).to.equal('aborted')
    await run.dispose()
  })

  it('dispose while the start waits for a slot rejects ABORTED, calls no provider and gives the slot to the next start', async () => {
    const first = await h.ctx.subagents.delegate('alpha', request(h.root))
    const queued = h.ctx.subagents.begin('alpha', request(h.root, { prompt: 'queued' }))
    const behind = h.ctx.subagents.delegate('alpha', request(h.root, { prompt: 'behind' }))
    await tick()
    await (queued as unknown as { dispose(): Promise<void> }).dispose()
    expect(await rejection(queued.handle)).to.be.instanceOf(SubagentError).with.property('code', 'ABORTED')
    await first.dispose()
    const next = await behind
    expect(provider.calls.map((call) => call.prompt)).to.not.include('queued')
    await next.dispose()
  })

  it('a start that waits holds one waiter on the caller signal, handed from its wait to its run', async () => {
    const controller = new AbortController()
    const first = await h.ctx.subagents.delegate('alpha', request(h.root))
    const queued = h.ctx.subagents.begin('alpha', request(h.root, { signal: controller.signal }))
    await tick()
    expect(abortWaiters(controller.signal), 'the wait').to.equal(1)
    await first.dispose()
    const run = await queued.handle
    expect(abortWaiters(controller.signal), 'the run; the wait let go').to.equal(1)
    provider.last.complete()
    await run.result
    expect(abortWaiters(controller.signal)).to.equal(0)
    await run.dispose()
  })

  it('cancel while the provider is starting the child rejects ABORTED and stops what the provider hands over late', async () => {
    provider.hold = deferred<void>()
    const started = h.ctx.subagents.begin('alpha', request(h.root))
    await tick()
    expect(provider.calls).to.have.length(1)
    started.cancel('stop')
    const error = await rejection(started.handle)
    expect(error).to.have.property('code', 'ABORTED')
    provider.hold.resolve()
    await tick()
    await tick()
    expect(provider.last.disposeCalls).to.equal(1)
    expect(h.ctx.subagents.runs()).to.deep.equal([])
  })

  it('a request that fails its checks rejects the handle; its cancel is harmless', async () => {
    const started = h.ctx.subagents.begin('nope', request(h.root))
    started.cancel('stop')
    expect(await rejection(started.handle)).to.have.property('code', 'NO_PROVIDER')
  })

  it('many runs on one caller signal share one waiter each in a Set, and let go of it when they end', async () => {
    // One parent each (this harness admits one child per parent at a time).
    const controller = new AbortController()
    const runs = await Promise.all(Array.from({ length: 20 }, (_, i) => h.ctx.subagents.delegate('alpha',
      request(h.ctx.agents.create({ label: `parent-${i}` }), { signal: controller.signal }))))
    expect(abortWaiters(controller.signal)).to.equal(20)
    provider.runs[0].complete()
    await runs[0].result
    expect(abortWaiters(controller.signal)).to.equal(19)
    controller.abort(new Error('the parent stopped'))
    for (const run of runs.slice(1)) expect((await run.result).stopReason).to.equal('aborted')
    await Promise.all(runs.map((run) => run.dispose()))
    expect(abortWaiters(controller.signal)).to.equal(0)
  })

  it('wantsUpdates(): true while the caller has onUpdate or a subagent/update listener exists, false after the end', async () => {
    const quiet = await h.ctx.subagents.delegate('alpha', request(h.root))
    const wants = provider.last.request.wantsUpdates!
    expect(wants()).to.equal(false)
    const stop = h.ctx.on('subagent/update', () => {})
    expect(wants()).to.equal(true)
    stop()
    expect(wants()).to.equal(false)
    provider.last.complete()
    await quiet.result
    await quiet.dispose()

    const other = h.ctx.agents.create({ label: 'listener' })
    const seen: string[] = []
    const heard = await h.ctx.subagents.delegate('alpha', request(other, { onUpdate: (update) => seen.push(update.kind) }))
    expect(provider.last.request.wantsUpdates!()).to.equal(true)
    provider.last.update('text', 'hello')
    expect(seen).to.deep.equal(['text'])
    provider.last.complete()
    await heard.result
    expect(provider.last.request.wantsUpdates!()).to.equal(false)
    await heard.dispose()
  })
})
