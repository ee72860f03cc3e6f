/// <reference types="mocha" />
import { expect } from 'chai'
import { Context, type Schema } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import { FAILED } from './helpers.js'

interface ProviderModule {
  name: string
  inject: string[]
  reusable: boolean
  Config: Schema<any, any>
  apply(ctx: Context, config: unknown): void
}

/** The entry checks shared by the in-process provider packages (spawn and fork). */
export function describeLoaderShape(
  pkg: string, load: () => Promise<ProviderModule>, expected: { name: string; provider: string; inheritsParentContext: boolean },
) {
  describe(`${pkg} entry (as the loader sees it)`, () => {
    const contexts: Context[] = []

    afterEach(async () => {
      for (const ctx of contexts.splice(0)) await ctx.stop()
    })

    it('is a namespace plugin: named name, inject, Config, apply, reusable; no default export', async () => {
      const mod = await load()
      expect(mod).to.not.have.property('default')
      // @cordisjs/loader uses `exports.default ?? exports`: the module itself is the plugin.
      const plugin = (mod as { default?: unknown }).default ?? mod
      expect(plugin).to.equal(mod)
      expect(mod.name).to.equal(expected.name)
      expect(mod.inject).to.deep.equal(['subagents', 'agents'])
      expect(mod.reusable).to.equal(true)
      expect(mod.Config).to.be.a('function')
      expect(mod.apply).to.be.a('function')
    })

    it('loads as the loader would and waits for its services', async () => {
      const mod = await load()
      const ctx = new Context()
      contexts.push(ctx)
      const errors: unknown[] = []
      ctx.on('internal/error', (error) => { errors.push(error) })
      // Loaded before the services it injects: it waits for them instead of failing.
      const fork = ctx.plugin(mod, mod.Config({}))
      await ctx.start()
      ctx.plugin(ToolRegistry)
      ctx.plugin(AgentRuntime)
      expect(ctx.get('subagents')).to.equal(undefined)
      ctx.plugin(SubagentService)
      await ctx.lifecycle.flush()
      expect(fork.status).to.not.equal(FAILED)
      expect(errors).to.deep.equal([])
      expect(ctx.subagents.list().map((p) => [p.name, p.inheritsParentContext]))
        .to.deep.equal([[expected.provider, expected.inheritsParentContext]])
    })
  })
}
