/// <reference types="mocha" />
import { expect } from 'chai'
import { Context, Service } from 'cordis'

describe('@cordis-subagents/tools entry (as the loader sees it)', () => {
  const contexts: Context[] = []

  afterEach(async () => {
    for (const ctx of contexts.splice(0)) await ctx.stop()
  })

  it('default-exports the ToolRegistry Service class, with no stray named inject', async () => {
    const mod = await import('@cordis-subagents/tools')
    // @cordisjs/loader uses `exports.default ?? exports`
    const plugin = mod.default
    expect(plugin).to.equal(mod.ToolRegistry)
    expect(plugin.prototype).to.be.instanceOf(Service)
    expect(mod).to.not.have.property('inject')
    expect(mod).to.not.have.property('apply')
  })

  it('new Context().plugin(mod.default) provides ctx.tools synchronously', async () => {
    const mod = await import('@cordis-subagents/tools')
    const ctx = new Context()
    contexts.push(ctx)
    ctx.plugin(mod.default)
    expect(ctx.tools).to.be.instanceOf(mod.ToolRegistry)
    await ctx.start()
    ctx.tools.register({
      name: 'ping',
      description: 'Replies pong.',
      input: (await import('zod')).z.object({}),
      execute: () => ({ content: 'pong' }),
    })
    expect(ctx.tools.view().list().map((spec) => spec.name)).to.deep.equal(['ping'])
  })

  it('disposing the plugin withdraws ctx.tools', async () => {
    const mod = await import('@cordis-subagents/tools')
    const ctx = new Context()
    contexts.push(ctx)
    const fork = ctx.plugin(mod.default)
    await ctx.start()
    fork.dispose()
    expect(ctx.get('tools')).to.equal(undefined)
  })
})
