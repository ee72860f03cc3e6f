/// <reference types="mocha" />
import { expect } from 'chai'
import { Context, Logger, Service } from 'cordis'
import { FAILED, tick } from './helpers.js'

describe('@cordis-subagents/subagents-service entry (as the loader sees it)', () => {
  const contexts: Context[] = []

  afterEach(async () => {
    for (const ctx of contexts.splice(0)) await ctx.stop()
    await tick()
  })

  it('default-exports the SubagentService Service class, with no stray named inject/apply', async () => {
    const mod = await import('@cordis-subagents/subagents-service')
    // @cordisjs/loader uses `exports.default ?? exports`
    const plugin = mod.default
    expect(plugin).to.equal(mod.SubagentService)
    expect(plugin.prototype).to.be.instanceOf(Service)
    expect(plugin.Config).to.equal(mod.Config)
    expect(mod).to.not.have.property('inject')
    expect(mod).to.not.have.property('apply')
    expect(mod.SubagentError).to.be.a('function')
  })

  it('new Context().plugin(mod.default) provides ctx.subagents synchronously and survives ready', async () => {
    const mod = await import('@cordis-subagents/subagents-service')
    const ctx = new Context()
    contexts.push(ctx)
    const errors: unknown[] = []
    ctx.on('internal/error', (error) => { errors.push(error) })
    const fork = ctx.plugin(mod.default)
    expect(ctx.subagents).to.be.instanceOf(mod.SubagentService)
    await ctx.start()
    await ctx.lifecycle.flush()
    // cordis calls the Service lifecycle start() on ready; it must not be mistaken for a run start.
    expect(errors).to.deep.equal([])
    expect(fork.status).to.not.equal(FAILED)
    expect(ctx.subagents.list()).to.deep.equal([])
  })

  it("cordis' no-argument lifecycle start() is harmless: it starts no run and registers nothing", async () => {
    const mod = await import('@cordis-subagents/subagents-service')
    const ctx = new Context()
    contexts.push(ctx)
    const errors: unknown[] = []
    ctx.on('internal/error', (error) => { errors.push(error) })
    const starts: unknown[] = []
    ctx.on('subagent/start', (info) => { starts.push(info) })
    ctx.plugin(mod.default)
    await ctx.start()
    await ctx.lifecycle.flush()
    // The lifecycle hook the service inherits from cordis; called again by hand it still does nothing.
    await (ctx.subagents as unknown as { start(): Promise<void> }).start() // protected in cordis' Service
    expect(errors).to.deep.equal([])
    expect(starts).to.deep.equal([])
    expect(ctx.subagents.runs()).to.deep.equal([])
    expect(ctx.subagents.list()).to.deep.equal([])
    expect(typeof ctx.subagents.delegate).to.equal('function')
  })

  it('applies the Config schema: bounded defaults, rejects a non-positive maxConcurrentPerParent', async () => {
    const mod = await import('@cordis-subagents/subagents-service')
    const defaults = { maxDepth: 3, maxChildren: 16, maxConcurrent: 16, maxConcurrentPerParent: 8 }
    expect(mod.Config({} as any)).to.deep.equal(defaults)
    expect(mod.Config({ maxConcurrentPerParent: 2 })).to.deep.equal({ ...defaults, maxConcurrentPerParent: 2 })
    expect(() => mod.Config({ maxConcurrent: 0 })).to.throw()
    expect(() => mod.Config({ maxConcurrentPerParent: 0 })).to.throw()
    expect(() => mod.Config({ maxConcurrentPerParent: 1.5 })).to.throw()

    // cordis logs the failed load; keep it off the test output.
    const saved = Logger.targets.splice(0, Logger.targets.length)
    try {
      const ctx = new Context()
      contexts.push(ctx)
      const errors: unknown[] = []
      ctx.on('internal/error', (error) => { errors.push(error) })
      const fork = ctx.plugin(mod.default, { maxConcurrentPerParent: 0 })
      await ctx.start()
      expect(fork.status).to.equal(FAILED)
      expect(ctx.get('subagents')).to.equal(undefined)
      expect(errors).to.have.length(1)
    } finally {
      Logger.targets.splice(0, Logger.targets.length, ...saved)
    }
  })

  it('disposing the plugin withdraws ctx.subagents', async () => {
    const mod = await import('@cordis-subagents/subagents-service')
    const ctx = new Context()
    contexts.push(ctx)
    const fork = ctx.plugin(mod.default)
    await ctx.start()
    fork.dispose()
    expect(ctx.get('subagents')).to.equal(undefined)
  })
})
