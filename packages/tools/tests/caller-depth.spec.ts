/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import fc from 'fast-check'
import { ToolError, type ToolView } from '@cordis-subagents/tools'
import { makeExec, makeTool, registering, setup } from './helpers.js'

describe('maxCallerDepth and view.forDepth', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  const visible = (view: ToolView) => view.list().map((spec) => spec.name).sort()

  it('a view for depth 1 hides a tool with maxCallerDepth 0 from list, names and has; depth 0 sees it', () => {
    ctx.tools.register(makeTool('top', { maxCallerDepth: 0 }))
    ctx.tools.register(makeTool('shared'))
    const root = ctx.tools.view()
    expect(root.callerDepth).to.equal(0)
    expect(visible(root)).to.deep.equal(['shared', 'top'])
    const child = root.forDepth(1)
    expect(child.callerDepth).to.equal(1)
    expect(visible(child)).to.deep.equal(['shared'])
    expect(child.names()).to.deep.equal(['shared'])
    expect(child.has('top')).to.equal(false)
    expect(child.has('shared')).to.equal(true)
    expect(root.has('top')).to.equal(true) // the view it came from is unchanged
  })

  it('a call of a hidden tool by name gets exactly the result of a name that does not exist, and never runs it', async () => {
    let ran = 0
    ctx.tools.register(makeTool('top', { maxCallerDepth: 0, execute: () => { ran++; return { content: 'ran' } } }))
    ctx.tools.register(makeTool('shared'))
    const child = ctx.tools.view().forDepth(1)
    const hidden = await child.execute({ name: 'top', input: { text: 'x' } }, makeExec())
    const missing = await child.execute({ name: 'nothing', input: { text: 'x' } }, makeExec())
    expect(hidden).to.deep.equal({ isError: true, content: 'Unknown tool "top". Available tools: shared.' })
    expect(missing.content.replace('nothing', 'top')).to.equal(hidden.content)
    // Even an aborted signal or invalid input does not reveal it (the name is checked first).
    const aborted = new AbortController()
    aborted.abort()
    expect((await child.execute({ name: 'top', input: {} }, makeExec({ signal: aborted.signal }))).content).to.equal(hidden.content)
    expect(ran).to.equal(0)
  })

  it('is live: a tool registered later with maxCallerDepth is hidden from a view made before it', async () => {
    const child = ctx.tools.view().forDepth(2)
    const restricted = child.restrict({ deny: ['other'] })
    ctx.plugin(registering(makeTool('late', { maxCallerDepth: 1 }), makeTool('deep', { maxCallerDepth: 2 })))
    await ctx.lifecycle.flush()
    expect(visible(child)).to.deep.equal(['deep'])
    expect(visible(restricted)).to.deep.equal(['deep'])
    expect(visible(ctx.tools.view().forDepth(1))).to.deep.equal(['deep', 'late'])
  })

  it('restrict keeps the depth, and forDepth keeps the filter and the result cap', () => {
    for (const name of ['a', 'b']) ctx.tools.register(makeTool(name))
    ctx.tools.register(makeTool('top', { maxCallerDepth: 0 }))
    const filtered = ctx.tools.view({ deny: ['a'] }, { maxResultBytes: 2048 })
    const child = filtered.forDepth(1)
    expect(visible(child)).to.deep.equal(['b'])
    expect(child.resultCap).to.equal(2048)
    const narrower = child.restrict({ allow: ['b', 'top'] })
    expect(narrower.callerDepth).to.equal(1)
    expect(visible(narrower)).to.deep.equal(['b'])
  })

  it('never gets shallower: forDepth with a smaller or equal depth returns the same view', () => {
    ctx.tools.register(makeTool('top', { maxCallerDepth: 0 }))
    const deep = ctx.tools.view().forDepth(3)
    expect(deep.forDepth(1)).to.equal(deep)
    expect(deep.forDepth(3)).to.equal(deep)
    expect(deep.forDepth(0).has('top')).to.equal(false)
    const root = ctx.tools.view()
    expect(root.forDepth(0)).to.equal(root)
  })

  it('siblings share one view: forDepth with the same depth twice returns the same view', () => {
    const root = ctx.tools.view({ deny: ['x'] })
    const first = root.forDepth(1)
    expect(root.forDepth(1)).to.equal(first)
    expect(root.forDepth(2)).to.not.equal(first)
    expect(root.forDepth(2).callerDepth).to.equal(2)
  })

  it('forDepth rejects a depth that is not an integer >= 0 with INVALID_CONFIG', () => {
    const view = ctx.tools.view()
    for (const bad of [-1, 1.5, NaN, Infinity, '1' as never]) {
      expect(() => view.forDepth(bad), String(bad)).to.throw(ToolError, /forDepth/).with.property('code', 'INVALID_CONFIG')
    }
  })

  it('register rejects a maxCallerDepth that is not an integer >= 0 with INVALID_TOOL naming it', () => {
    for (const bad of [-1, 0.5, NaN, '0' as never, null as never]) {
      expect(() => ctx.tools.register(makeTool('t', { maxCallerDepth: bad })), String(bad))
        .to.throw(ToolError, /maxCallerDepth/).with.property('code', 'INVALID_TOOL')
    }
    expect(ctx.tools.has('t')).to.equal(false)
  })

  it('reads maxCallerDepth once, at registration: changing the tool object later has no effect', () => {
    const tool = makeTool('top', { maxCallerDepth: 0 })
    ctx.tools.register(tool)
    tool.maxCallerDepth = 5
    expect(ctx.tools.view().forDepth(1).has('top')).to.equal(false)
  })

  it('property: a view for depth d sees exactly the tools whose maxCallerDepth is omitted or >= d', () => {
    const depths = [undefined, 0, 1, 2, 3]
    depths.forEach((maxCallerDepth, i) => ctx.tools.register(makeTool(`t${i}`, maxCallerDepth === undefined ? {} : { maxCallerDepth })))
    fc.assert(fc.property(fc.array(fc.nat({ max: 5 }), { maxLength: 4 }), (chain) => {
      let view = ctx.tools.view()
      let depth = 0
      for (const next of chain) {
        view = view.forDepth(next)
        depth = Math.max(depth, next)
        const expected = depths.flatMap((max, i) => max === undefined || depth <= max ? [`t${i}`] : [])
        expect(visible(view)).to.deep.equal(expected)
        expect(view.callerDepth).to.equal(depth)
      }
    }), { numRuns: 200 })
  })
})
