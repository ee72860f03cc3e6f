/// <reference types="mocha" />
import { expect } from 'chai'
import type { SubagentOutcome, SubagentRunInfo } from '@cordis-subagents/subagents-service'
import {
  type Harness, FakeProvider, deferred, recordEvents, rejection, request, setup, tick,
} from './helpers.js'
import { unhandledRejectionsDuring } from '@cordis-subagents/test-support'

describe('subagent/start, subagent/update, subagent/end', () => {
  let h: Harness
  let provider: FakeProvider

  beforeEach(async () => {
    h = await setup()
    provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
  })
  afterEach(async () => { await h.stop() })

  it('start → update* → end with the run info, the update and the result', async () => {
    const events = recordEvents(h.ctx)
    const run = await h.ctx.subagents.delegate('alpha', request(h.root, { label: 'task' }))
    provider.last.update('step')
    provider.last.update('text', 'thinking')
    provider.last.complete('answer', { usage: { inputTokens: 3, outputTokens: 4 } })
    const result = await run.result
    const id = run.id
    expect(events.log).to.deep.equal([`start:${id}`, `update:${id}:step`, `update:${id}:thinking`, `end:${id}:completed`])
    const [[startInfo], [, update], , [endInfo, endResult]] = events.args as [SubagentRunInfo, any][]
    expect(startInfo).to.equal(run.info)
    expect(startInfo).to.deep.equal({
      runId: id, provider: 'alpha', label: 'task', parentId: h.root.id, childId: 'child-1', depth: 1,
      startedAt: run.info.startedAt,
    })
    expect(update).to.deep.equal({ kind: 'step' })
    expect(endInfo).to.equal(run.info)
    expect(endResult).to.equal(result)
    expect((endResult as SubagentOutcome).durationMs).to.be.a('number')
    await run.dispose()
  })

  it('start is emitted before start() fulfils; end before run.result settles', async () => {
    const order: string[] = []
    h.ctx.on('subagent/start', () => { order.push('event:start') })
    h.ctx.on('subagent/end', () => { order.push('event:end') })
    const run = await h.ctx.subagents.delegate('alpha', request(h.root))
    order.push('handed-over')
    provider.last.complete()
    await run.result
    order.push('result')
    expect(order).to.deep.equal(['event:start', 'handed-over', 'event:end', 'result'])
    await run.dispose()
  })

  it('keeps the order when the provider result is already settled at hand-over', async () => {
    provider.onRun = (scripted) => scripted.complete('instant')
    const events = recordEvents(h.ctx)
    const run = await h.ctx.subagents.delegate('alpha', request(h.root))
    await run.result
    expect(events.log).to.deep.equal([`start:${run.id}`, `end:${run.id}:completed`])
    await run.dispose()
  })

  it('keeps the order when the provider result already rejected at hand-over', async () => {
    provider.onRun = (scripted) => {
      scripted.outcome.reject(new Error('died at birth'))
      scripted.outcome.promise.catch(() => {})
    }
    const events = recordEvents(h.ctx)
    const run = await h.ctx.subagents.delegate('alpha', request(h.root))
    const result = await run.result
    expect(result.stopReason).to.equal('error')
    expect(events.log).to.deep.equal([`start:${run.id}`, `end:${run.id}:error`])
    await run.dispose()
  })

  it('updates sent before the hand-over are emitted right after start, in order', async () => {
    provider.hold = deferred()
    const events = recordEvents(h.ctx)
    const starting = h.ctx.subagents.delegate('alpha', request(h.root))
    await tick()
    provider.calls[0].onUpdate!({ kind: 'status', text: 'spawning' })
    provider.calls[0].onUpdate!({ kind: 'status', text: 'initialised' })
    expect(events.log).to.deep.equal([])
    provider.hold.resolve()
    const run = await starting
    expect(events.log).to.deep.equal([`start:${run.id}`, `update:${run.id}:spawning`, `update:${run.id}:initialised`])
    await run.dispose()
  })

  it('updates after end are dropped (no event, no forwarding)', async () => {
    const forwarded: string[] = []
    const events = recordEvents(h.ctx)
    const run = await h.ctx.subagents.delegate('alpha', request(h.root, { onUpdate: (u) => forwarded.push(u.kind) }))
    provider.last.complete()
    await run.result
    provider.last.update('text', 'straggler')
    await run.dispose()
    provider.last.update('text', 'after dispose')
    expect(events.log).to.deep.equal([`start:${run.id}`, `end:${run.id}:completed`])
    expect(forwarded).to.deep.equal([])
  })

  it('no events at all when start rejects (pre-check, provider failure, abort during start)', async () => {
    const events = recordEvents(h.ctx)
    await rejection(h.ctx.subagents.delegate('nope', request(h.root)))
    await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { prompt: '' })))
    provider.startError = new Error('boom')
    await rejection(h.ctx.subagents.delegate('alpha', request(h.root)))
    provider.startError = undefined
    provider.hold = deferred()
    const controller = new AbortController()
    const starting = h.ctx.subagents.delegate('alpha', request(h.root, { signal: controller.signal }))
    await tick()
    provider.calls[provider.calls.length - 1].onUpdate!({ kind: 'status', text: 'early' })
    controller.abort()
    await rejection(starting)
    provider.hold.resolve()
    await tick()
    expect(events.log).to.deep.equal([])
  })

  it('subagent/start-failed: once for a start the provider was asked for that never became a run, never for a refusal before it', async () => {
    const failures: { runId: string; provider: string; parentId: string; label?: string; code: string }[] = []
    h.ctx.on('subagent/start-failed', ({ error, ...rest }) => { failures.push({ ...rest, code: error.code }) })
    await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { prompt: '' })))
    const early = new AbortController()
    early.abort()
    await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { signal: early.signal })))
    expect(failures).to.deep.equal([])
    provider.startError = new Error('boom')
    const failed = await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { label: 'broken' })))
    provider.startError = undefined
    provider.hold = deferred()
    const controller = new AbortController()
    const starting = h.ctx.subagents.delegate('alpha', request(h.root, { signal: controller.signal }))
    await tick()
    controller.abort()
    const aborted = await rejection(starting)
    provider.hold.resolve()
    await tick()
    const [first, second] = provider.calls.map((call) => call.runId)
    expect(failures).to.deep.equal([
      { runId: first, provider: 'alpha', parentId: h.root.id, label: 'broken', code: 'PROVIDER_START_FAILED' },
      { runId: second, provider: 'alpha', parentId: h.root.id, code: 'ABORTED' },
    ])
    expect([(failed as { code?: string }).code, (aborted as { code?: string }).code]).to.deep.equal(['PROVIDER_START_FAILED', 'ABORTED'])
  })

  for (const event of ['subagent/start', 'subagent/update', 'subagent/end'] as const) {
    it(`a throwing and a rejecting ${event} listener are contained and logged; other listeners and the run go on`, async () => {
      const unhandled: unknown[] = []
      const onUnhandled = (reason: unknown) => { unhandled.push(reason) }
      process.on('unhandledRejection', onUnhandled)
      try {
        h.ctx.on(event, () => { throw new Error(`sync ${event}`) })
        h.ctx.on(event, async () => { throw new Error(`async ${event}`) })
        const events = recordEvents(h.ctx)
        const run = await h.ctx.subagents.delegate('alpha', request(h.root))
        expect(() => provider.last.update('text', 'hi')).to.not.throw()
        provider.last.complete('ok')
        const result = await run.result
        await tick()
        expect(result.output).to.equal('ok')
        expect(events.log).to.deep.equal([`start:${run.id}`, `update:${run.id}:hi`, `end:${run.id}:completed`])
        expect(h.warnings).to.have.length(2)
        expect(h.warnings.join('\n')).to.include(`sync ${event}`).and.include(`async ${event}`)
        expect(unhandled).to.deep.equal([])
        expect(h.errors).to.deep.equal([])
        await run.dispose()
      } finally {
        process.off('unhandledRejection', onUnhandled)
      }
    })
  }

  it('a listener that cancels the run from subagent/start is fine (cancel → end still after start)', async () => {
    h.ctx.on('subagent/start', () => { h.ctx.subagents.runs() })
    let cancelFromListener: (() => void) | undefined
    h.ctx.on('subagent/update', () => { cancelFromListener?.() })
    const events = recordEvents(h.ctx)
    const run = await h.ctx.subagents.delegate('alpha', request(h.root))
    cancelFromListener = () => run.cancel('listener said stop')
    provider.last.update('text', 'x')
    const result = await run.result
    expect(result.stopReason).to.equal('aborted')
    expect(events.log).to.deep.equal([`start:${run.id}`, `update:${run.id}:x`, `end:${run.id}:aborted`])
    await run.dispose()
  })

  it('several concurrent runs keep their own order', async () => {
    const events = recordEvents(h.ctx)
    const a = await h.ctx.subagents.delegate('alpha', request(h.root))
    const ra = provider.last
    const b = await h.ctx.subagents.delegate('alpha', request(h.root))
    const rb = provider.last
    rb.update('text', 'b1')
    ra.update('text', 'a1')
    rb.complete()
    await b.result
    ra.complete()
    await a.result
    expect(a.id).to.not.equal(b.id)
    const only = (id: string) => events.log.filter((line) => line.includes(id))
    expect(only(a.id)).to.deep.equal([`start:${a.id}`, `update:${a.id}:a1`, `end:${a.id}:completed`])
    expect(only(b.id)).to.deep.equal([`start:${b.id}`, `update:${b.id}:b1`, `end:${b.id}:completed`])
    await a.dispose()
    await b.dispose()
  })

  describe('ctx.subagents.observe: direct listeners', () => {
    it('gets the same events and arguments as cordis listeners, after them; a throwing handler is logged and stops nothing', async () => {
      const order: string[] = []
      h.ctx.on('subagent/end', () => { order.push('cordis:end') })
      const seen: unknown[][] = []
      h.ctx.subagents.observe({
        'subagent/start': (info) => { seen.push(['start', info]); throw new Error('observer broke') },
        'subagent/update': (info, update) => { seen.push(['update', info, update]) },
        'subagent/end': (info, outcome) => { order.push('direct:end'); seen.push(['end', info, outcome]) },
      })
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      provider.last.update('text', 'working')
      provider.last.complete('done')
      const outcome = await run.result
      expect(seen.map((entry) => entry[0])).to.deep.equal(['start', 'update', 'end'])
      expect(seen[0][1]).to.equal(run.info)
      expect(seen[1][2]).to.deep.equal({ kind: 'text', text: 'working' })
      expect(seen[2][2]).to.equal(outcome)
      expect(outcome.output).to.equal('done')
      expect(order).to.deep.equal(['cordis:end', 'direct:end'])
      expect(h.warnings.join('\n')).to.include('observer broke')
      await run.dispose()
    })

    it('an async handler that rejects, and an async onUpdate that rejects, are logged: no unhandled rejection, the run ends as usual', async () => {
      let outcome: SubagentOutcome | undefined
      const left = await unhandledRejectionsDuring(async () => {
        h.ctx.subagents.observe({
          'subagent/start': async () => { throw new Error('an async observer broke at start') },
          'subagent/end': async () => { throw new Error('an async observer broke at end') },
        })
        const run = await h.ctx.subagents.delegate('alpha', { ...request(h.root), onUpdate: async () => { throw new Error('an async onUpdate broke') } })
        provider.last.update('text', 'working')
        provider.last.complete('done')
        outcome = await run.result
        await run.dispose()
      })
      expect(left.map((reason) => (reason as Error).message)).to.deep.equal([])
      expect(outcome?.output).to.equal('done')
      const warned = h.warnings.join('\n')
      for (const what of ['an async observer broke at start', 'an async observer broke at end', 'an async onUpdate broke']) expect(warned).to.include(what)
    })

    it('counts as a listener for has() (updates are built for it), and goes with the plugin that observed', async () => {
      const seen: string[] = []
      const fork = h.ctx.plugin({
        name: 'observer',
        apply: (ctx: typeof h.ctx) => {
          ctx.subagents.observe({ 'subagent/update': (_info, update) => { seen.push(update.text ?? update.kind) } })
        },
      })
      await h.ctx.lifecycle.flush()
      const first = await h.ctx.subagents.begin('alpha', request(h.root)).handle
      expect(provider.calls[0].wantsUpdates!()).to.equal(true)
      provider.last.update('text', 'one')
      fork.dispose()
      expect(provider.calls[0].wantsUpdates!()).to.equal(false)
      provider.last.update('text', 'two')
      expect(seen).to.deep.equal(['one'])
      provider.last.complete()
      await first.result
      await first.dispose()
    })

    it('rejects a handler map that is not an object', () => {
      expect(() => h.ctx.subagents.observe(undefined as never)).to.throw().with.property('code', 'INVALID_REQUEST')
    })
  })
})
