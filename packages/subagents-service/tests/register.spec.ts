/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { SubagentError, type SubagentProvider } from '@cordis-subagents/subagents-service'
import {
  ALL, FAILED, type Harness, NONE, FakeProvider, providerPlugin, recordEvents, setup, tick,
} from './helpers.js'

describe('ctx.subagents registry', () => {
  let h: Harness

  beforeEach(async () => { h = await setup() })
  afterEach(async () => { await h.stop() })

  describe('register', () => {
    it('stores the provider; get, list (registration order) see it', () => {
      const a = new FakeProvider('alpha')
      const b = new FakeProvider('beta', NONE)
      h.ctx.subagents.register(b)
      h.ctx.subagents.register(a)
      expect(h.ctx.subagents.get('alpha')).to.equal(a)
      expect(h.ctx.subagents.get('gamma')).to.equal(undefined)
      expect(h.ctx.subagents.list()).to.deep.equal([b, a])
    })

    it('the returned dispose removes the provider and announces it once', () => {
      const events = recordEvents(h.ctx)
      const dispose = h.ctx.subagents.register(new FakeProvider('alpha'))
      dispose()
      dispose()
      expect(h.ctx.subagents.get('alpha')).to.equal(undefined)
      expect(events.log).to.deep.equal(['added:alpha', 'removed:alpha'])
    })

    it('announces subagent/provider-added with the provider after storing it', () => {
      const seen: unknown[] = []
      h.ctx.on('subagent/provider-added', (provider) => {
        seen.push([provider, h.ctx.subagents.get(provider.name)])
      })
      const provider = new FakeProvider('alpha')
      h.ctx.subagents.register(provider)
      expect(seen).to.deep.equal([[provider, provider]])
    })

    it('a provider registered by a plugin leaves with it: removed after deletion, then gone', async () => {
      const seen: unknown[] = []
      h.ctx.on('subagent/provider-removed', (name) => {
        seen.push([name, h.ctx.subagents.get(name)])
      })
      const fork = h.ctx.plugin(providerPlugin(new FakeProvider('alpha')))
      await h.ctx.lifecycle.flush()
      expect(h.ctx.subagents.get('alpha')).to.not.equal(undefined)
      fork.dispose()
      expect(seen).to.deep.equal([['alpha', undefined]])
      expect(h.ctx.subagents.list()).to.deep.equal([])
    })

    it('a provider plugin reloaded with a new config: removed, then added with the new descriptor', async () => {
      const events = recordEvents(h.ctx)
      const plugin = {
        name: 'reloadable-provider',
        inject: ['subagents'],
        apply(ctx: Context, config: { description: string }) {
          const provider = new FakeProvider('alpha')
          provider.description = config.description
          ctx.subagents.register(provider)
        },
      }
      const fork = h.ctx.plugin(plugin, { description: 'v1' })
      await h.ctx.lifecycle.flush()
      expect(h.ctx.subagents.get('alpha')?.description).to.equal('v1')
      fork.update({ description: 'v2' })
      await h.ctx.lifecycle.flush()
      expect(events.log).to.deep.equal(['added:alpha', 'removed:alpha', 'added:alpha'])
      expect((events.args[2][0] as SubagentProvider).description).to.equal('v2')
      expect(h.ctx.subagents.get('alpha')?.description).to.equal('v2')
      expect(h.errors).to.deep.equal([])
    })

    it('DUPLICATE_PROVIDER across two plugins: the second fails alone, the first keeps its provider', async () => {
      const first = new FakeProvider('alpha')
      const second = new FakeProvider('alpha')
      const events = recordEvents(h.ctx)
      const one = h.ctx.plugin(providerPlugin(first))
      const two = h.ctx.plugin(providerPlugin(second))
      await h.ctx.lifecycle.flush()
      expect(two.runtime.status).to.equal(FAILED)
      expect(one.runtime.status).to.not.equal(FAILED)
      expect(h.errors).to.have.length(1)
      expect(h.errors[0]).to.be.instanceOf(SubagentError).with.property('code', 'DUPLICATE_PROVIDER')
      expect(h.ctx.subagents.get('alpha')).to.equal(first)
      expect(events.log).to.deep.equal(['added:alpha'])
      // The failed plugin going away does not take the first plugin's provider with it.
      two.dispose()
      expect(h.ctx.subagents.get('alpha')).to.equal(first)
      expect(events.log).to.deep.equal(['added:alpha'])
    })

    it('DUPLICATE_PROVIDER within one scope too; the name is free again after dispose', () => {
      const dispose = h.ctx.subagents.register(new FakeProvider('alpha'))
      expect(() => h.ctx.subagents.register(new FakeProvider('alpha')))
        .to.throw(SubagentError).with.property('code', 'DUPLICATE_PROVIDER')
      dispose()
      const again = new FakeProvider('alpha')
      h.ctx.subagents.register(again)
      expect(h.ctx.subagents.get('alpha')).to.equal(again)
    })

    const invalid: [string, (p: any) => void][] = [
      ['not an object', () => {}],
      ['a bad name', (p) => { p.name = 'has space' }],
      ['an empty name', (p) => { p.name = '' }],
      ['a 65-char name', (p) => { p.name = 'x'.repeat(65) }],
      ['a non-string description', (p) => { p.description = 42 }],
      ['no capabilities', (p) => { delete p.capabilities }],
      ['a non-boolean capability', (p) => { p.capabilities = { ...ALL, depthLimit: 'yes' } }],
      ['a missing capability', (p) => { p.capabilities = { persona: true, toolFilter: true } }],
      ['no inheritsParentContext', (p) => { delete p.inheritsParentContext }],
      ['no start function', (p) => { p.start = 'go' }],
    ]
    for (const [label, mutate] of invalid) {
      it(`INVALID_PROVIDER for ${label}; nothing stored or announced`, () => {
        const events = recordEvents(h.ctx)
        let provider: any = new FakeProvider('alpha')
        if (label === 'not an object') provider = null
        else mutate(provider)
        expect(() => h.ctx.subagents.register(provider))
          .to.throw(SubagentError).with.property('code', 'INVALID_PROVIDER')
        expect(h.ctx.subagents.list()).to.deep.equal([])
        expect(events.log).to.deep.equal([])
      })
    }

    it('accepts the full name alphabet (A-Z a-z 0-9 _ -) up to 64 chars', () => {
      const name = `Az09_-${'x'.repeat(58)}`
      h.ctx.subagents.register(new FakeProvider(name))
      expect(h.ctx.subagents.get(name)).to.not.equal(undefined)
    })
  })

  describe('listener isolation on provider events', () => {
    for (const event of ['subagent/provider-added', 'subagent/provider-removed'] as const) {
      it(`a throwing and a rejecting ${event} listener are logged; the others still run; nothing rolls back`, async () => {
        const calls: string[] = []
        h.ctx.on(event, () => { calls.push('first'); throw new Error('listener boom') })
        h.ctx.on(event, async () => { calls.push('second'); throw new Error('async boom') })
        h.ctx.on(event, () => { calls.push('third') })
        const unhandled: unknown[] = []
        const onUnhandled = (reason: unknown) => { unhandled.push(reason) }
        process.on('unhandledRejection', onUnhandled)
        try {
          const fork = h.ctx.plugin(providerPlugin(new FakeProvider('alpha')))
          await h.ctx.lifecycle.flush()
          expect(fork.runtime.status).to.not.equal(FAILED)
          if (event === 'subagent/provider-added') {
            expect(h.ctx.subagents.get('alpha')).to.not.equal(undefined)
          } else {
            fork.dispose()
            expect(h.ctx.subagents.get('alpha')).to.equal(undefined)
          }
          await tick()
          expect(calls).to.deep.equal(['first', 'second', 'third'])
          expect(h.errors).to.deep.equal([])
          expect(unhandled).to.deep.equal([])
          expect(h.warnings).to.have.length(2)
          expect(h.warnings.join('\n')).to.include(event).and.include('listener boom').and.include('async boom')
        } finally {
          process.off('unhandledRejection', onUnhandled)
        }
      })
    }

    it('a hostile listener (throws a non-Error, returns a rejecting thenable) is contained', async () => {
      h.ctx.on('subagent/provider-added', () => { throw Object.create(null) })
      h.ctx.on('subagent/provider-added', () => ({ then: (_: unknown, reject: (e: unknown) => void) => reject('nope') }) as any)
      const later: string[] = []
      h.ctx.on('subagent/provider-added', (provider) => { later.push(provider.name) })
      expect(() => h.ctx.subagents.register(new FakeProvider('alpha'))).to.not.throw()
      await tick()
      expect(later).to.deep.equal(['alpha'])
      expect(h.warnings).to.have.length(2)
    })

    it('a listener that unloads another listener\'s plugin: the removed listener is not called', async () => {
      const calls: string[] = []
      let other: { dispose(): unknown } | undefined
      h.ctx.on('subagent/provider-added', () => { calls.push('first'); other?.dispose() })
      other = h.ctx.plugin((ctx: Context) => {
        ctx.on('subagent/provider-added', () => { calls.push('second') })
      })
      h.ctx.subagents.register(new FakeProvider('alpha'))
      expect(calls).to.deep.equal(['first'])
    })
  })

  describe('follow', () => {
    const recorder = (log: string[], tag = '') => ({
      added: (provider: SubagentProvider) => { log.push(`${tag}added:${provider.name}`) },
      removed: () => { log.push(`${tag}removed`) },
    })

    it('tells the follower at once when the provider is there, on each re-registration and each removal; only for its name', async () => {
      const log: string[] = []
      const first = h.ctx.plugin(providerPlugin(new FakeProvider('alpha')))
      await h.ctx.lifecycle.flush()
      h.ctx.plugin((ctx: Context) => { ctx.subagents.follow('alpha', recorder(log)) })
      expect(log).to.deep.equal(['added:alpha'])
      h.ctx.subagents.register(new FakeProvider('beta'))
      first.dispose()
      expect(log).to.deep.equal(['added:alpha', 'removed'])
      const again = new FakeProvider('alpha')
      h.ctx.subagents.register(again)
      expect(log).to.deep.equal(['added:alpha', 'removed', 'added:alpha'])
    })

    it('followers are told before the provider-added and provider-removed listeners run', async () => {
      const log: string[] = []
      h.ctx.on('subagent/provider-added', (provider) => { log.push(`event added:${provider.name}`) })
      h.ctx.on('subagent/provider-removed', (name) => { log.push(`event removed:${name}`) })
      h.ctx.plugin((ctx: Context) => { ctx.subagents.follow('alpha', recorder(log)) })
      const dispose = h.ctx.subagents.register(new FakeProvider('alpha'))
      dispose()
      expect(log).to.deep.equal(['added:alpha', 'event added:alpha', 'removed', 'event removed:alpha'])
    })

    it('a follower of a provider not yet registered is told when it comes; followers are told before ready() resumes', async () => {
      const log: string[] = []
      h.ctx.plugin((ctx: Context) => { ctx.subagents.follow('late', recorder(log)) })
      const ready = h.ctx.subagents.ready('late').then(() => log.push('ready'))
      expect(log).to.deep.equal([])
      h.ctx.subagents.register(new FakeProvider('late'))
      await ready
      expect(log).to.deep.equal(['added:late', 'ready'])
    })

    it('stops with the caller\'s scope: a disposed follower hears nothing more', async () => {
      const log: string[] = []
      const follower = h.ctx.plugin((ctx: Context) => { ctx.subagents.follow('alpha', recorder(log)) })
      await h.ctx.lifecycle.flush()
      follower.dispose()
      const dispose = h.ctx.subagents.register(new FakeProvider('alpha'))
      dispose()
      expect(log).to.deep.equal([])
    })

    it('leaves nothing behind: 200 follows from plugins loaded and unloaded, and the book of followers is empty', async () => {
      type Inside = { waiters: { followers: Map<string, Set<unknown>> } }
      const book = (withoutCallerTracing(h.ctx.subagents) as unknown as Inside).waiters.followers
      const log: string[] = []
      for (let i = 0; i < 200; i++) {
        const fork = h.ctx.plugin((ctx: Context) => { ctx.subagents.follow(`p${i % 7}`, recorder(log)) })
        await h.ctx.lifecycle.flush()
        expect(book.size).to.equal(1)
        fork.dispose()
      }
      expect(book.size).to.equal(0)
      const dispose = h.ctx.subagents.register(new FakeProvider('p1'))
      dispose()
      expect(log).to.deep.equal([])
    })

    it('a throwing follower is logged; the other followers, the registration and the removal go on', async () => {
      const log: string[] = []
      h.ctx.plugin((ctx: Context) => {
        ctx.subagents.follow('alpha', { added: () => { throw new Error('added boom') }, removed: () => { throw new Error('removed boom') } })
        ctx.subagents.follow('alpha', recorder(log))
      })
      const dispose = h.ctx.subagents.register(new FakeProvider('alpha'))
      expect(h.ctx.subagents.get('alpha')).to.not.equal(undefined)
      dispose()
      expect(h.ctx.subagents.get('alpha')).to.equal(undefined)
      expect(log).to.deep.equal(['added:alpha', 'removed'])
      expect(h.warnings.join('\n')).to.include('added boom').and.include('removed boom')
      expect(h.errors).to.deep.equal([])
    })

    it('what added throws at once fails the caller\'s plugin loudly, and that plugin follows nothing', async () => {
      const first = h.ctx.subagents.register(new FakeProvider('alpha'))
      let calls = 0
      const fork = h.ctx.plugin({
        name: 'bad-follower', inject: ['subagents'],
        apply(ctx: Context) { ctx.subagents.follow('alpha', { added: () => { calls++; throw new Error('mount boom') }, removed() {} }) },
      })
      await h.ctx.lifecycle.flush()
      expect(fork.runtime.status).to.equal(FAILED)
      expect(calls).to.equal(1)
      first()
      h.ctx.subagents.register(new FakeProvider('alpha'))
      expect(calls).to.equal(1)
      expect(h.ctx.subagents.get('alpha')).to.not.equal(undefined)
    })

    for (const [label, args] of [
      ['a name that is not a string', [7, { added() {}, removed() {} }]],
      ['no follower', ['alpha', undefined]],
      ['a follower without removed', ['alpha', { added() {} }]],
    ] as const) {
      it(`INVALID_REQUEST for ${label}`, () => {
        let error: unknown
        try { (h.ctx.subagents.follow as (...a: unknown[]) => unknown)(...args) } catch (e) { error = e }
        expect(error).to.be.instanceOf(SubagentError)
        expect((error as SubagentError).code).to.equal('INVALID_REQUEST')
      })
    }
  })

  it('registering needs an active caller scope (cordis INACTIVE_EFFECT); nothing is stored', async () => {
    let saved: Context | undefined
    const fork = h.ctx.plugin({
      name: 'late-registrar',
      inject: ['subagents'],
      apply(ctx: Context) { saved = ctx },
    })
    await h.ctx.lifecycle.flush()
    fork.dispose()
    expect(() => saved!.subagents.register(new FakeProvider('alpha'))).to.throw()
    expect(h.ctx.subagents.list()).to.deep.equal([])
  })

  it('no listeners are left after ctx.stop()', async () => {
    h.ctx.plugin(providerPlugin(new FakeProvider('alpha')))
    recordEvents(h.ctx)
    await h.ctx.lifecycle.flush()
    await h.stop()
    for (const name of ['subagent/provider-added', 'subagent/provider-removed', 'subagent/start', 'subagent/update', 'subagent/end']) {
      expect(h.ctx.lifecycle._hooks[name] ?? [], name).to.have.length(0)
    }
  })
})
