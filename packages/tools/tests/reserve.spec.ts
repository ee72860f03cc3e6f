/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { ToolError, type ToolChange, type ToolReservation } from '@cordis-subagents/tools'
import { FAILED, makeExec, makeTool, names, plugin, registering, setup } from './helpers.js'

describe('ctx.tools.reserve', () => {
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

  /** A plugin that reserves `name` and hands the reservation out. */
  function reserving(name: string, sink: { reservation?: ToolReservation } = {}) {
    return plugin((ctx) => { sink.reservation = ctx.tools.reserve(name) })
  }

  function expectDuplicate(error: unknown) {
    expect(error).to.be.instanceOf(ToolError).with.property('code', 'DUPLICATE_TOOL')
  }

  describe('conflicts', () => {
    it('reserve, then another plugin registering the name fails with DUPLICATE_TOOL', async () => {
      const holder = ctx.plugin(reserving('subagent'))
      const other = ctx.plugin(registering(makeTool('subagent')))
      await ctx.lifecycle.flush()
      expect(holder.runtime.status).to.not.equal(FAILED)
      expect(other.runtime.status).to.equal(FAILED)
      expect(errors).to.have.length(1)
      expectDuplicate(errors[0])
      expect(names(ctx)).to.deep.equal([])
      expect(changes).to.deep.equal([])
    })

    it('register, then another plugin reserving the name fails with DUPLICATE_TOOL', async () => {
      const owner = ctx.plugin(registering(makeTool('subagent')))
      const other = ctx.plugin(reserving('subagent'))
      await ctx.lifecycle.flush()
      expect(owner.runtime.status).to.not.equal(FAILED)
      expect(other.runtime.status).to.equal(FAILED)
      expect(errors).to.have.length(1)
      expectDuplicate(errors[0])
      expect(names(ctx)).to.deep.equal(['subagent'])
    })

    it('a second reservation of the name by another plugin fails with DUPLICATE_TOOL', async () => {
      const first: { reservation?: ToolReservation } = {}
      const holder = ctx.plugin(reserving('subagent', first))
      const other = ctx.plugin(reserving('subagent'))
      await ctx.lifecycle.flush()
      expect(holder.runtime.status).to.not.equal(FAILED)
      expect(other.runtime.status).to.equal(FAILED)
      expectDuplicate(errors[0])
      // the first reservation still works
      first.reservation!.register(makeTool('subagent'))
      expect(names(ctx)).to.deep.equal(['subagent'])
    })

    it('the same scope reserving a name twice fails with DUPLICATE_TOOL', () => {
      ctx.tools.reserve('twice')
      expect(() => ctx.tools.reserve('twice')).to.throw(ToolError).with.property('code', 'DUPLICATE_TOOL')
    })

    it('the reserving scope itself cannot bypass the reservation with register()', () => {
      ctx.tools.reserve('mine')
      expect(() => ctx.tools.register(makeTool('mine'))).to.throw(ToolError, /reservation\.register/).with.property('code', 'DUPLICATE_TOOL')
    })

    it('rejects an invalid name with INVALID_TOOL', () => {
      expect(() => ctx.tools.reserve('not valid')).to.throw(ToolError).with.property('code', 'INVALID_TOOL')
    })
  })

  describe('reservation.register', () => {
    it('registers the tool under the reserved name; its dispose unregisters; registering again works', async () => {
      const reservation = ctx.tools.reserve('subagent')
      expect(reservation.name).to.equal('subagent')
      expect(names(ctx)).to.deep.equal([])
      const dispose = reservation.register(makeTool('subagent'))
      expect(names(ctx)).to.deep.equal(['subagent'])
      expect(await ctx.tools.view().execute({ name: 'subagent', input: { text: 'go' } }, makeExec()))
        .to.deep.equal({ content: 'subagent:go' })
      dispose()
      expect(names(ctx)).to.deep.equal([])
      // still reserved while unmounted
      expect(() => ctx.tools.register(makeTool('subagent'))).to.throw(ToolError).with.property('code', 'DUPLICATE_TOOL')
      reservation.register(makeTool('subagent', { description: 'Remounted.' }))
      expect(ctx.tools.list().map((spec) => spec.description)).to.deep.equal(['Remounted.'])
      expect(changes).to.deep.equal([['subagent', 'added'], ['subagent', 'removed'], ['subagent', 'added']])
    })

    it('a stale dispose does not remove a later registration', () => {
      const reservation = ctx.tools.reserve('subagent')
      const first = reservation.register(makeTool('subagent'))
      first()
      reservation.register(makeTool('subagent'))
      first()
      expect(names(ctx)).to.deep.equal(['subagent'])
    })

    it('registering a different name through the reservation fails with INVALID_TOOL', () => {
      const reservation = ctx.tools.reserve('subagent')
      expect(() => reservation.register(makeTool('other'))).to.throw(ToolError).with.property('code', 'INVALID_TOOL')
      expect(names(ctx)).to.deep.equal([])
    })

    it('registering twice without disposing fails with DUPLICATE_TOOL', () => {
      const reservation = ctx.tools.reserve('subagent')
      reservation.register(makeTool('subagent'))
      expect(() => reservation.register(makeTool('subagent'))).to.throw(ToolError).with.property('code', 'DUPLICATE_TOOL')
      expect(names(ctx)).to.deep.equal(['subagent'])
    })

    it('validates the tool like register does', () => {
      const reservation = ctx.tools.reserve('subagent')
      expect(() => reservation.register(makeTool('subagent', { description: '' }))).to.throw(ToolError).with.property('code', 'INVALID_TOOL')
    })
  })

  describe('release', () => {
    it('disposing the reservation removes its tool and frees the name', async () => {
      const reservation = ctx.tools.reserve('subagent')
      reservation.register(makeTool('subagent'))
      reservation.dispose()
      reservation.dispose()
      expect(names(ctx)).to.deep.equal([])
      expect(changes).to.deep.equal([['subagent', 'added'], ['subagent', 'removed']])
      expect(() => reservation.register(makeTool('subagent'))).to.throw(ToolError).with.property('code', 'INVALID_TOOL')
      const other = ctx.plugin(registering(makeTool('subagent')))
      await ctx.lifecycle.flush()
      expect(other.runtime.status).to.not.equal(FAILED)
      expect(names(ctx)).to.deep.equal(['subagent'])
    })

    it('disposing the reserving plugin removes its tool and frees the name', async () => {
      const sink: { reservation?: ToolReservation } = {}
      const holder = ctx.plugin(reserving('subagent', sink))
      await ctx.lifecycle.flush()
      sink.reservation!.register(makeTool('subagent'))
      expect(names(ctx)).to.deep.equal(['subagent'])
      holder.dispose()
      expect(names(ctx)).to.deep.equal([])
      expect(() => sink.reservation!.register(makeTool('subagent'))).to.throw(ToolError).with.property('code', 'INVALID_TOOL')
      const next = ctx.plugin(reserving('subagent'))
      await ctx.lifecycle.flush()
      expect(next.runtime.status).to.not.equal(FAILED)
      expect(errors).to.deep.equal([])
    })

    it('a reloaded plugin re-reserves its own name and re-registers', async () => {
      const mounting = plugin((ctx, config: { description: string }) => {
        ctx.tools.reserve('subagent').register(makeTool('subagent', { description: config.description }))
      })
      const fork = ctx.plugin(mounting, { description: 'One.' })
      await ctx.lifecycle.flush()
      fork.update({ description: 'Two.' })
      await ctx.lifecycle.flush()
      expect(errors).to.deep.equal([])
      expect(ctx.tools.list().map((spec) => spec.description)).to.deep.equal(['Two.'])
      expect(changes).to.deep.equal([['subagent', 'added'], ['subagent', 'removed'], ['subagent', 'added']])
    })

    it('a plugin may reserve a name that it already registered itself', () => {
      ctx.tools.register(makeTool('own'))
      expect(() => ctx.tools.reserve('own')).to.not.throw()
    })
  })
})
