// A tree budget across the process boundary: a parent host of ours delegates through the real
// provider-acp to the bin; the served agent reports its spend as it goes and the parent charges
// it to its own tree, and the remaining budget crosses down so the child stops at it.
import { expect } from 'chai'
import { Context } from 'cordis'
import { z } from 'zod'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as acp from '@cordis-subagents/provider-acp'
import { appYml, BIN, build, Workspace } from './helpers.js'

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

  async function parentHost(): Promise<Context> {
    const config = ws.file('child.yml', appYml({ serve: `store: ${JSON.stringify(ws.store)}`, parts: 'delayMs: 100' }))
    const host = new Context()
    host.plugin(ToolRegistry)
    host.plugin(AgentRuntime, {})
    host.plugin(SubagentService)
    // The child may use only what its parent may (the tool ceiling crosses too): the parent has echo.
    host.plugin({
      name: 'parent-tools', inject: ['tools'],
      apply: (ctx: Context) => { ctx.tools.register({ name: 'echo', description: 'Echoes.', input: z.object({ text: z.string() }), execute: async ({ text }) => ({ content: text }) }) },
    })
    host.plugin(acp, { name: 'acp', command: process.execPath, args: [BIN, config], cwd: ws.dir } as acp.Config)
    await host.start()
    await host.lifecycle.flush()
    return host
  }

  it('the child\'s steps, tool calls and tokens are charged to the parent\'s tree', async () => {
    ctx = await parentHost()
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
    ctx = await parentHost()
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
