/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import { ToolError, type ToolChange } from '@cordis-subagents/tools'
import { FAILED, makeExec, makeTool, names, plugin, registering, setup } from './helpers.js'

describe('ctx.tools.register', () => {
  let ctx: Context
  let errors: unknown[]
  let changes: [string, ToolChange][]

  beforeEach(async () => {
    ({ ctx, errors } = await setup())
    changes = []
    ctx.on('tools/changed', (name, change) => { changes.push([name, change]) })
  })

  afterEach(async () => {
    await ctx.stop()
  })

  describe('scope binding', () => {
    it('a plugin registers a tool that every view then sees', async () => {
      ctx.plugin(registering(makeTool('search')))
      await ctx.lifecycle.flush()
      expect(names(ctx)).to.deep.equal(['search'])
      expect(ctx.tools.has('search')).to.equal(true)
      const result = await ctx.tools.view().execute({ name: 'search', input: { text: 'x' } }, makeExec())
      expect(result).to.deep.equal({ content: 'search:x' })
      expect(changes).to.deep.equal([['search', 'added']])
      expect(errors).to.deep.equal([])
    })

    it('disposing the plugin removes its tools and emits removed', async () => {
      const fork = ctx.plugin(registering(makeTool('a'), makeTool('b')))
      await ctx.lifecycle.flush()
      expect(names(ctx)).to.deep.equal(['a', 'b'])
      fork.dispose()
      expect(names(ctx)).to.deep.equal([])
      expect(ctx.tools.has('a')).to.equal(false)
      expect(changes).to.deep.equal([['a', 'added'], ['b', 'added'], ['a', 'removed'], ['b', 'removed']])
    })

    it('disposing one plugin leaves the tools of another plugin alone', async () => {
      const first = ctx.plugin(registering(makeTool('a')))
      ctx.plugin(registering(makeTool('b')))
      await ctx.lifecycle.flush()
      first.dispose()
      expect(names(ctx)).to.deep.equal(['b'])
    })

    it('reloading the plugin with a changed config removes then re-adds its tool', async () => {
      const versioned = plugin((ctx, config: { version: number }) => {
        ctx.tools.register(makeTool('versioned', { description: `Version ${config.version}.` }))
      })
      const fork = ctx.plugin(versioned, { version: 1 })
      await ctx.lifecycle.flush()
      expect(ctx.tools.list()[0].description).to.equal('Version 1.')
      fork.update({ version: 2 })
      await ctx.lifecycle.flush()
      expect(ctx.tools.list().map((spec) => spec.description)).to.deep.equal(['Version 2.'])
      expect(changes).to.deep.equal([['versioned', 'added'], ['versioned', 'removed'], ['versioned', 'added']])
      expect(errors).to.deep.equal([])
    })

    it('dispose then re-plugin removes then re-adds the tool', async () => {
      const tool = makeTool('again')
      ctx.plugin(registering(tool)).dispose()
      ctx.plugin(registering(tool))
      await ctx.lifecycle.flush()
      expect(names(ctx)).to.deep.equal(['again'])
      expect(changes).to.deep.equal([['again', 'added'], ['again', 'removed'], ['again', 'added']])
    })

    it('the dispose function returned by register unregisters once and is idempotent', async () => {
      const dispose = ctx.tools.register(makeTool('manual'))
      expect(ctx.tools.has('manual')).to.equal(true)
      dispose()
      dispose()
      expect(ctx.tools.has('manual')).to.equal(false)
      // the name is free again, and the stale dispose does not remove the new registration
      ctx.tools.register(makeTool('manual'))
      dispose()
      expect(ctx.tools.has('manual')).to.equal(true)
      expect(changes).to.deep.equal([['manual', 'added'], ['manual', 'removed'], ['manual', 'added']])
    })

    it('a throwing tools/changed listener neither blocks nor rolls back a registration', async () => {
      ctx.on('tools/changed', () => { throw new Error('listener bug') })
      const dispose = ctx.tools.register(makeTool('sturdy'))
      expect(ctx.tools.has('sturdy')).to.equal(true)
      dispose()
      expect(ctx.tools.has('sturdy')).to.equal(false)
    })
  })

  describe('validation', () => {
    const badNames: unknown[] = ['', 'has space', 'dot.name', 'ünïcode', 'a'.repeat(65), 'slash/name', 42, undefined, null]
    for (const name of badNames) {
      it(`rejects the name ${JSON.stringify(name)?.slice(0, 20) ?? String(name)} with INVALID_TOOL`, () => {
        expect(() => ctx.tools.register(makeTool(name as string))).to.throw(ToolError).with.property('code', 'INVALID_TOOL')
        expect(names(ctx)).to.deep.equal([])
      })
    }

    it('accepts names of 1-64 letters, digits, "_" and "-"', () => {
      for (const name of ['a', 'A_b-9', 'x'.repeat(64)]) ctx.tools.register(makeTool(name))
      expect(names(ctx)).to.have.length(3)
    })

    it('rejects a missing or blank description', () => {
      expect(() => ctx.tools.register(makeTool('t', { description: undefined as unknown as string })))
        .to.throw(ToolError, /description/).with.property('code', 'INVALID_TOOL')
      expect(() => ctx.tools.register(makeTool('t', { description: '   ' })))
        .to.throw(ToolError, /description/).with.property('code', 'INVALID_TOOL')
    })

    it('rejects a missing execute function', () => {
      expect(() => ctx.tools.register(makeTool('t', { execute: undefined as never })))
        .to.throw(ToolError, /execute/).with.property('code', 'INVALID_TOOL')
    })

    it('rejects an input that is not a zod object schema', () => {
      for (const input of [undefined, { type: 'object' }, z.string(), z.object({ a: z.string() }).transform((v) => v)]) {
        expect(() => ctx.tools.register(makeTool('t', { input: input as never })))
          .to.throw(ToolError, /zod object/).with.property('code', 'INVALID_TOOL')
      }
    })

    it('rejects an input schema that JSON Schema cannot express, with INVALID_TOOL', () => {
      expect(() => ctx.tools.register(makeTool('t', { input: z.object({ when: z.date() }) })))
        .to.throw(ToolError, /JSON Schema/).with.property('code', 'INVALID_TOOL')
    })

    it('rejects a non-object tool', () => {
      expect(() => ctx.tools.register(null as never)).to.throw(ToolError).with.property('code', 'INVALID_TOOL')
    })

    it('emits nothing for a rejected tool', () => {
      expect(() => ctx.tools.register(makeTool('bad name'))).to.throw(ToolError)
      expect(changes).to.deep.equal([])
    })
  })

  describe('duplicates', () => {
    it('a second plugin registering a taken name fails alone with DUPLICATE_TOOL', async () => {
      const first = ctx.plugin(registering(makeTool('search')))
      const second = ctx.plugin(registering(makeTool('other'), makeTool('search', { description: 'Impostor.' })))
      await ctx.lifecycle.flush()
      expect(first.runtime.status).to.not.equal(FAILED)
      expect(second.runtime.status).to.equal(FAILED)
      expect(errors).to.have.length(1)
      expect(errors[0]).to.be.instanceOf(ToolError).with.property('code', 'DUPLICATE_TOOL')
      // the failed plugin's earlier registration went with it; the first plugin's tool is untouched
      expect(names(ctx)).to.deep.equal(['search'])
      expect(ctx.tools.list()[0].description).to.equal('The search tool.')
      const result = await ctx.tools.view().execute({ name: 'search', input: { text: 'q' } }, makeExec())
      expect(result).to.deep.equal({ content: 'search:q' })
      expect(changes).to.deep.equal([['search', 'added'], ['other', 'added'], ['other', 'removed']])
    })

    it('the same scope registering a name twice throws DUPLICATE_TOOL', () => {
      ctx.tools.register(makeTool('twice'))
      expect(() => ctx.tools.register(makeTool('twice'))).to.throw(ToolError).with.property('code', 'DUPLICATE_TOOL')
      expect(names(ctx)).to.deep.equal(['twice'])
    })

    it('the name frees up when its owner goes away', async () => {
      const first = ctx.plugin(registering(makeTool('search')))
      await ctx.lifecycle.flush()
      first.dispose()
      const second = ctx.plugin(registering(makeTool('search', { description: 'Second.' })))
      await ctx.lifecycle.flush()
      expect(second.runtime.status).to.not.equal(FAILED)
      expect(ctx.tools.list()[0].description).to.equal('Second.')
    })
  })
})
