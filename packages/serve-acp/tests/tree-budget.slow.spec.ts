// A tree budget across the process boundary: a parent host of ours delegates through the real
// provider-acp to the bin; the served agent reports its spend as it goes and the parent charges
// it to its own tree, and the remaining budget crosses down so the child stops at it.
import { expect } from 'chai'
import { Context } from 'cordis'
import { z } from 'zod'
import type { Tool } from '@cordis-subagents/tools'
import { appYml, build, Workspace } from './helpers.js'
import { parentHost } from './parent-host.js'

describe('serve-acp under provider-acp: spend charged to the parent\'s tree', function () {
  this.timeout(60_000)
  let ws: Workspace
  let ctx: Context | undefined

  before(() => build())
  beforeEach(() => { ws = new Workspace() })
  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
    await ws.dispose()
  })

  // The child may use only what its parent may (the tool ceiling crosses too): the parent has echo.
  const startParent = () => parentHost(ws, ws.file('child.yml', appYml({ serve: `store: ${JSON.stringify(ws.store)}`, parts: 'delayMs: 100' })), [
    { name: 'echo', description: 'Echoes.', input: z.object({ text: z.string() }), execute: async ({ text }: { text: string }) => ({ content: text }) },
  ] as Tool[])

  it('the child\'s steps, tool calls and tokens are charged to the parent\'s tree', async () => {
    ctx = await startParent()
    const parent = ctx.agents.create({ budget: { maxSteps: 20 } })
    const run = await ctx.subagents.delegate('acp', { prompt: 'echo across', parent, signal: new AbortController().signal })
    const result = await run.result
    await run.dispose()
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    expect(result.output).to.equal('echoed: across')
    expect(result.work).to.deep.equal({ steps: 2, toolCalls: 1, delegations: 0 })
    // The parent made no model call itself: everything its tree spent came over the wire.
    expect(parent.budget.spent.steps).to.equal(2)
    expect(parent.budget.spent.toolCalls).to.equal(1)
    expect(parent.budget.spent.tokens).to.equal(30)
    await parent.dispose()
  })

  it('a parent with maxSteps 3: the child stops at the remaining budget, and the tree spends no more than 3 steps', async () => {
    ctx = await startParent()
    const parent = ctx.agents.create({ budget: { maxSteps: 3 } })
    const run = await ctx.subagents.delegate('acp', { prompt: 'loop', parent, signal: new AbortController().signal })
    const result = await run.result
    await run.dispose()
    expect(result.stopReason).to.be.oneOf(['error', 'budget'])
    expect(result.diagnostic).to.match(/steps/i)
    expect(parent.budget.spent.steps).to.equal(3)
    await parent.dispose()
  })
})
