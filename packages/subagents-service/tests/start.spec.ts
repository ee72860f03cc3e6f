/// <reference types="mocha" />
import { expect } from 'chai'
import type { Agent } from '@cordis-subagents/agent'
import { SubagentError, type SubagentRequest } from '@cordis-subagents/subagents-service'
import {
  ALL, type Harness, NONE, FakeProvider, deferred, isSettled, providerPlugin, recordEvents, rejection,
  request, setup, tick,
} from './helpers.js'

describe('ctx.subagents.delegate', () => {
  let h: Harness

  beforeEach(async () => { h = await setup() })
  afterEach(async () => { await h.stop() })

  it('hands over a run: service runId (also given to the provider), depth, child identity', async () => {
    const provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
    const run = await h.ctx.subagents.delegate('alpha', request(h.root, { label: 'summary', persona: 'terse', maxDepth: 3 }))
    expect(provider.calls).to.have.length(1)
    const sent = provider.calls[0]
    expect(sent.runId).to.equal(run.id)
    expect(sent.depth).to.equal(h.root.depth + 1)
    expect(sent.prompt).to.equal('Summarise the file.')
    expect(sent.parent).to.equal(h.root)
    expect(sent.persona).to.equal('terse')
    expect(sent.signal).to.be.instanceOf(AbortSignal)
    expect(sent.onUpdate).to.be.a('function')
    expect(run.childId).to.equal('child-1')
    expect(run.info).to.deep.include({
      runId: run.id, provider: 'alpha', label: 'summary', parentId: h.root.id, childId: 'child-1', depth: 1,
    })
    expect(run.info.startedAt).to.be.a('number')
    expect(h.ctx.subagents.runs()).to.deep.equal([run.info])
    provider.last.complete()
    await run.result
    await run.dispose()
    expect(h.ctx.subagents.runs()).to.deep.equal([])
  })

  it('omitted options add no keys to info', async () => {
    const provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
    const run = await h.ctx.subagents.delegate('alpha', request(h.root))
    expect(run.info).to.not.have.property('label')
    await run.dispose()
  })

  describe('pre-checks (the provider is never called)', () => {
    it('NO_PROVIDER for an unknown name, listing the registered ones', async () => {
      const provider = new FakeProvider('alpha')
      h.ctx.subagents.register(provider)
      const error = await rejection(h.ctx.subagents.delegate('beta', request(h.root)))
      expect(error).to.be.instanceOf(SubagentError).with.property('code', 'NO_PROVIDER')
      expect(error.message).to.include('"beta"').and.include('alpha')
      expect(provider.calls).to.have.length(0)
    })

    it('NO_PROVIDER after the provider was removed (looked up on every start)', async () => {
      const provider = new FakeProvider('alpha')
      const fork = h.ctx.plugin(providerPlugin(provider))
      await h.ctx.lifecycle.flush()
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      fork.dispose()
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root)))
      expect(error).to.have.property('code', 'NO_PROVIDER')
      expect(provider.calls).to.have.length(1)
      await run.dispose()
    })

    const capabilityCases: [keyof typeof ALL, Partial<SubagentRequest>][] = [
      ['persona', { persona: 'You are terse.' }],
      ['toolFilter', { toolFilter: { deny: ['shell'] } }],
      ['depthLimit', { maxDepth: 5 }],
    ]
    for (const [capability, options] of capabilityCases) {
      it(`UNSUPPORTED_CAPABILITY "${capability}" for ${Object.keys(options)[0]} on a provider without it`, async () => {
        const provider = new FakeProvider('alpha', { ...ALL, [capability]: false })
        h.ctx.subagents.register(provider)
        const events = recordEvents(h.ctx)
        const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root, options)))
        expect(error).to.be.instanceOf(SubagentError).with.property('code', 'UNSUPPORTED_CAPABILITY')
        expect(error.capability).to.equal(capability)
        expect(error.message).to.include(capability).and.include(Object.keys(options)[0])
        expect(provider.calls).to.have.length(0)
        expect(events.log).to.deep.equal([])
        // The same request without the option goes through.
        const run = await h.ctx.subagents.delegate('alpha', request(h.root))
        expect(provider.calls).to.have.length(1)
        await run.dispose()
      })
    }

    it('reports the missing capability before a malformed field (what the provider cannot do comes first)', async () => {
      const provider = new FakeProvider('alpha', NONE)
      h.ctx.subagents.register(provider)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { prompt: '', persona: 'x' })))
      expect(error).to.have.property('code', 'UNSUPPORTED_CAPABILITY')
      expect(error.capability).to.equal('persona')
      const malformed = await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { prompt: '' })))
      expect(malformed).to.have.property('code', 'INVALID_REQUEST')
      const notAnObject = await rejection(h.ctx.subagents.delegate('alpha', null as unknown as SubagentRequest))
      expect(notAnObject).to.have.property('code', 'INVALID_REQUEST')
      expect(provider.calls).to.have.length(0)
    })

    it('a provider with no capabilities accepts a plain request', async () => {
      const provider = new FakeProvider('acp-like', NONE)
      h.ctx.subagents.register(provider)
      const run = await h.ctx.subagents.delegate('acp-like', request(h.root, { label: 'x', agentOptions: { model: 'm' } }))
      expect(provider.calls).to.have.length(1)
      await run.dispose()
    })

    const invalid: [string, (parent: Agent) => unknown][] = [
      ['no request', () => undefined],
      ['an empty prompt', (parent) => request(parent, { prompt: '' })],
      ['a whitespace prompt', (parent) => request(parent, { prompt: '  \n ' })],
      ['a non-string prompt', (parent) => request(parent, { prompt: 42 as any })],
      ['no parent', (parent) => ({ ...request(parent), parent: undefined })],
      ['a parent without depth', () => request({ id: 'p' } as any)],
      ['a parent with negative depth', () => request({ id: 'p', depth: -1 } as any)],
      ['no signal', (parent) => ({ ...request(parent), signal: undefined })],
      ['a non-signal', (parent) => request(parent, { signal: {} as any })],
      ['a non-string label', (parent) => request(parent, { label: 7 as any })],
      ['an empty persona', (parent) => request(parent, { persona: '' })],
      ['a non-object agentOptions', (parent) => request(parent, { agentOptions: 'gpt' as any })],
      ['an empty agentOptions.model', (parent) => request(parent, { agentOptions: { model: '' } })],
      ['an agentOptions.name outside the name rule', (parent) => request(parent, { agentOptions: { name: 'has space' } })],
      ['a negative maxDepth', (parent) => request(parent, { maxDepth: -1 })],
      ['a fractional maxDepth', (parent) => request(parent, { maxDepth: 1.5 })],
      ['a NaN maxDepth', (parent) => request(parent, { maxDepth: Number.NaN })],
      ['a string maxDepth', (parent) => request(parent, { maxDepth: '2' as any })],
      ['an array toolFilter', (parent) => request(parent, { toolFilter: [] as any })],
      ['an empty toolFilter {}', (parent) => request(parent, { toolFilter: {} })],
      ['a toolFilter with only undefined keys', (parent) => request(parent, { toolFilter: { allow: undefined } })],
      ['a toolFilter with an unknown key', (parent) => request(parent, { toolFilter: { alow: ['a'] } as any })],
      ['a toolFilter.allow that is not an array', (parent) => request(parent, { toolFilter: { allow: 'read' as any } })],
      ['a toolFilter.deny with a non-string', (parent) => request(parent, { toolFilter: { deny: ['read', 3 as any] } })],
      ['a toolFilter.deny with an empty name', (parent) => request(parent, { toolFilter: { deny: [''] } })],
      ['a non-function onUpdate', (parent) => request(parent, { onUpdate: 'log' as any })],
    ]
    for (const [label, make] of invalid) {
      it(`INVALID_REQUEST for ${label}`, async () => {
        const provider = new FakeProvider('alpha')
        h.ctx.subagents.register(provider)
        const events = recordEvents(h.ctx)
        const error = await rejection(h.ctx.subagents.delegate('alpha', make(h.root) as SubagentRequest))
        expect(error).to.be.instanceOf(SubagentError).with.property('code', 'INVALID_REQUEST')
        expect(provider.calls).to.have.length(0)
        expect(events.log).to.deep.equal([])
        expect(h.ctx.subagents.runs()).to.deep.equal([])
      })
    }

    it('accepts toolFilter { allow: [] } (a child with no tools) and { deny: [] }', async () => {
      const provider = new FakeProvider('alpha')
      h.ctx.subagents.register(provider)
      const a = await h.ctx.subagents.delegate('alpha', request(h.root, { toolFilter: { allow: [] } }))
      const b = await h.ctx.subagents.delegate('alpha', request(h.root, { toolFilter: { deny: [] } }))
      expect(provider.calls.map((call) => call.toolFilter)).to.deep.equal([{ allow: [] }, { deny: [] }])
      await a.dispose()
      await b.dispose()
    })

    it('ABORTED for an already aborted signal', async () => {
      const provider = new FakeProvider('alpha')
      h.ctx.subagents.register(provider)
      const events = recordEvents(h.ctx)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { signal: AbortSignal.abort() })))
      expect(error).to.be.instanceOf(SubagentError).with.property('code', 'ABORTED')
      expect(provider.calls).to.have.length(0)
      expect(events.log).to.deep.equal([])
    })
  })

  describe('depth', () => {
    it('parent.depth + 1 == maxDepth is allowed; maxDepth 0 forbids any child', async () => {
      const provider = new FakeProvider('alpha')
      h.ctx.subagents.register(provider)
      const child = h.ctx.agents.create({ parent: h.root })
      expect(child.depth).to.equal(1)
      const run = await h.ctx.subagents.delegate('alpha', request(child, { maxDepth: 2 }))
      expect(provider.calls[0].depth).to.equal(2)
      expect(run.info.depth).to.equal(2)
      await run.dispose()

      const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { maxDepth: 0 })))
      expect(error).to.have.property('code', 'DEPTH_EXCEEDED')
    })

    it('DEPTH_EXCEEDED when parent.depth + 1 > maxDepth, with both numbers in the message and as properties', async () => {
      const provider = new FakeProvider('alpha')
      h.ctx.subagents.register(provider)
      const child = h.ctx.agents.create({ parent: h.root })
      const grandchild = h.ctx.agents.create({ parent: child })
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(grandchild, { maxDepth: 2 })))
      expect(error).to.be.instanceOf(SubagentError).with.property('code', 'DEPTH_EXCEEDED')
      expect(error.attempted).to.equal(3)
      expect(error.max).to.equal(2)
      expect(error.message).to.include('3').and.include('2')
      expect(provider.calls).to.have.length(0)
    })

    it('root depth from the agent runtime config counts (depth 4 root, maxDepth 4 rejected, 5 ok)', async () => {
      await h.stop()
      h = await setup({ maxDepth: 10 }, { depth: 4 })
      const provider = new FakeProvider('alpha')
      h.ctx.subagents.register(provider)
      expect(h.root.depth).to.equal(4)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { maxDepth: 4 })))
      expect(error).to.include({ code: 'DEPTH_EXCEEDED', attempted: 5, max: 4 })
      const run = await h.ctx.subagents.delegate('alpha', request(h.root, { maxDepth: 5 }))
      expect(run.info.depth).to.equal(5)
      await run.dispose()
    })

    it('without a request maxDepth the deployment ceiling applies: default 3, raised in the service config', async () => {
      const provider = new FakeProvider('alpha')
      h.ctx.subagents.register(provider)
      let agent = h.root
      for (let i = 0; i < 3; i++) agent = h.ctx.agents.create({ parent: agent })
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(agent)))
      expect(error).to.include({ code: 'DEPTH_EXCEEDED', attempted: 4, max: 3 })
      expect(error.message).to.include('deployment')
      expect(provider.calls).to.have.length(0)

      await h.stop()
      h = await setup({ maxDepth: 20 })
      h.ctx.subagents.register(new FakeProvider('alpha'))
      agent = h.root
      for (let i = 0; i < 12; i++) agent = h.ctx.agents.create({ parent: agent })
      const run = await h.ctx.subagents.delegate('alpha', request(agent))
      expect(run.info.depth).to.equal(13)
      await run.dispose()
    })

    it('a request maxDepth can lower the deployment ceiling but never raise it', async () => {
      const provider = new FakeProvider('alpha')
      h.ctx.subagents.register(provider)
      let agent = h.root
      for (let i = 0; i < 3; i++) agent = h.ctx.agents.create({ parent: agent })
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(agent, { maxDepth: 50 })))
      expect(error).to.include({ code: 'DEPTH_EXCEEDED', attempted: 4, max: 3 })
      expect(provider.calls).to.have.length(0)
    })
  })

  describe('provider start failures', () => {
    it('a rejecting provider start → PROVIDER_START_FAILED with the cause; no events; slot released', async () => {
      await h.stop()
      h = await setup({ maxConcurrentPerParent: 1 })
      const provider = new FakeProvider('alpha')
      provider.startError = new Error('spawn acp-agent ENOENT')
      h.ctx.subagents.register(provider)
      const events = recordEvents(h.ctx)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root)))
      expect(error).to.be.instanceOf(SubagentError).with.property('code', 'PROVIDER_START_FAILED')
      expect(error.message).to.include('alpha').and.include('ENOENT')
      expect(error.cause).to.equal(provider.startError)
      expect(events.log).to.deep.equal([])
      expect(h.ctx.subagents.runs()).to.deep.equal([])
      // The slot came back: with maxConcurrentPerParent 1 the next start is not queued.
      provider.startError = undefined
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      await run.dispose()
    })

    it('a provider start that throws synchronously is a rejection too', async () => {
      const provider = new FakeProvider('alpha')
      provider.start = (() => { throw new Error('sync boom') }) as any
      h.ctx.subagents.register(provider)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root)))
      expect(error).to.have.property('code', 'PROVIDER_START_FAILED')
      expect(error.message).to.include('sync boom')
    })

    it('a SubagentError from the provider passes through unchanged', async () => {
      const provider = new FakeProvider('alpha')
      provider.startError = new SubagentError('INVALID_REQUEST', 'unknown model "nope"')
      h.ctx.subagents.register(provider)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root)))
      expect(error).to.equal(provider.startError)
    })

    it('a provider that fulfils with a non-run → PROVIDER_START_FAILED; the bogus run is cleaned up', async () => {
      const provider = new FakeProvider('alpha')
      const cleaned: string[] = []
      provider.fakeRun = { id: 'x', cancel: () => cleaned.push('cancel'), dispose: async () => { cleaned.push('dispose') } }
      h.ctx.subagents.register(provider)
      const events = recordEvents(h.ctx)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root)))
      expect(error).to.have.property('code', 'PROVIDER_START_FAILED')
      await tick()
      expect(cleaned).to.deep.equal(['cancel', 'dispose'])
      expect(events.log).to.deep.equal([])
    })

    it('abort during provider start → ABORTED at once; the late run is cancelled and disposed; no events', async () => {
      await h.stop()
      h = await setup({ maxConcurrentPerParent: 1 })
      const provider = new FakeProvider('alpha')
      provider.hold = deferred()
      h.ctx.subagents.register(provider)
      const events = recordEvents(h.ctx)
      const controller = new AbortController()
      const starting = h.ctx.subagents.delegate('alpha', request(h.root, { signal: controller.signal }))
      await tick()
      expect(provider.calls).to.have.length(1)
      expect(provider.calls[0].signal.aborted).to.equal(false)
      controller.abort('user pressed stop')
      // The provider sees the abort on its request signal.
      expect(provider.calls[0].signal.aborted).to.equal(true)
      const error = await rejection(starting)
      expect(error).to.be.instanceOf(SubagentError).with.property('code', 'ABORTED')
      // The slot stays taken until the late run is gone.
      const next = h.ctx.subagents.delegate('alpha', request(h.root))
      expect(await isSettled(next)).to.equal(false)
      provider.hold.resolve()
      await tick()
      expect(provider.runs[0].cancels).to.have.length(1)
      expect(provider.runs[0].disposeCalls).to.equal(1)
      provider.hold = undefined
      const run = await next
      expect(events.log).to.deep.equal([`start:${run.id}`])
      await run.dispose()
    })
  })

  describe('start racing a provider unload', () => {
    it('a provider removed while a start waits in the queue → NO_PROVIDER, never called', async () => {
      await h.stop()
      h = await setup({ maxConcurrentPerParent: 1 })
      const provider = new FakeProvider('alpha')
      const fork = h.ctx.plugin(providerPlugin(provider))
      await h.ctx.lifecycle.flush()
      const first = await h.ctx.subagents.delegate('alpha', request(h.root))
      const queued = rejection(h.ctx.subagents.delegate('alpha', request(h.root)))
      await tick()
      fork.dispose()
      await first.dispose()
      const error = await queued
      expect(error).to.be.instanceOf(SubagentError).with.property('code', 'NO_PROVIDER')
      expect(error.message).to.include('removed while')
      expect(provider.calls).to.have.length(1)
      // Its slot was given back.
      const replacement = new FakeProvider('alpha')
      h.ctx.subagents.register(replacement)
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      await run.dispose()
    })

    it('a provider reloaded while a start waits: the start reaches the new provider', async () => {
      await h.stop()
      h = await setup({ maxConcurrentPerParent: 1 })
      const old = new FakeProvider('alpha')
      const fork = h.ctx.plugin(providerPlugin(old))
      await h.ctx.lifecycle.flush()
      const first = await h.ctx.subagents.delegate('alpha', request(h.root))
      const queued = h.ctx.subagents.delegate('alpha', request(h.root))
      await tick()
      fork.dispose()
      const fresh = new FakeProvider('alpha')
      h.ctx.plugin(providerPlugin(fresh))
      await h.ctx.lifecycle.flush()
      await first.dispose()
      const run = await queued
      expect(old.calls).to.have.length(1)
      expect(fresh.calls).to.have.length(1)
      expect(run.info.provider).to.equal('alpha')
      await run.dispose()
    })

    it('a start issued in the same tick as the unload never reaches the removed provider', async () => {
      const provider = new FakeProvider('alpha')
      const fork = h.ctx.plugin(providerPlugin(provider))
      await h.ctx.lifecycle.flush()
      fork.dispose()
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root)))
      expect(error).to.have.property('code', 'NO_PROVIDER')
      expect(provider.calls).to.have.length(0)
    })

    it('the provider unloading during its own start: the run is still handed over and kept', async () => {
      const provider = new FakeProvider('alpha')
      provider.hold = deferred()
      const fork = h.ctx.plugin(providerPlugin(provider))
      await h.ctx.lifecycle.flush()
      const starting = h.ctx.subagents.delegate('alpha', request(h.root))
      await tick()
      fork.dispose()
      provider.hold.resolve()
      const run = await starting
      provider.last.complete('still here')
      expect((await run.result).output).to.equal('still here')
      await run.dispose()
    })
  })
})
