/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { makeExec, makeTool, setup } from './helpers.js'

describe('ToolView.with(tool): a tool of one view only', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
  })
  afterEach(async () => {
    await ctx.stop()
  })

  it('lists and runs the view\'s own tool beside the registry\'s, and shadows a registered tool of the same name', async () => {
    ctx.tools.register(makeTool('search'))
    ctx.tools.register(makeTool('ask'))
    const base = ctx.tools.view()
    const view = base.with(makeTool('ask', { execute: ({ text }: { text: string }) => ({ content: `own:${text}` }) }))
    expect(view.names()).to.deep.equal(['search', 'ask'])
    expect(await view.execute({ name: 'ask', input: { text: 'x' } }, makeExec())).to.deep.equal({ content: 'own:x' })
    expect(await base.execute({ name: 'ask', input: { text: 'x' } }, makeExec())).to.deep.equal({ content: 'ask:x' })
    // Tools registered later are seen as usual.
    ctx.tools.register(makeTool('late'))
    expect(view.has('late')).to.equal(true)
  })

  it('forDepth keeps it (the agent\'s own view); restrict does not pass it on (a child\'s ceiling)', () => {
    const view = ctx.tools.view().with(makeTool('ask_parent'))
    expect(view.forDepth(2).names()).to.deep.equal(['ask_parent'])
    expect(view.restrict({ deny: ['nothing'] }).names()).to.deep.equal([])
  })

  it('a filter on the view below does not hide it; a malformed tool throws INVALID_TOOL', () => {
    ctx.tools.register(makeTool('search'))
    const view = ctx.tools.view({ allow: ['search'] }).with(makeTool('private'))
    expect(view.names()).to.deep.equal(['search', 'private'])
    expect(() => view.with({ name: 'bad name' } as never)).to.throw().with.property('code', 'INVALID_TOOL')
  })
})
