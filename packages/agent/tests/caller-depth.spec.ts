/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import { makeTool, modelPlugin, setup, toolPlugin } from './helpers.js'

/** Every agent at depth >= 1 gets its tools through forDepth: tools with a lower maxCallerDepth are hidden. */
describe('ctx.agents.create: tools by depth (maxCallerDepth)', () => {
  let ctx: Context
  let saved: string | undefined

  beforeEach(() => {
    saved = process.env.SUBAGENT_DEPTH
    delete process.env.SUBAGENT_DEPTH
  })

  afterEach(async () => {
    await ctx?.stop()
    if (saved === undefined) delete process.env.SUBAGENT_DEPTH
    else process.env.SUBAGENT_DEPTH = saved
  })

  const names = (agent: { tools: { names(): string[] } }) => agent.tools.names().sort()

  async function withTools(config = {}) {
    ;({ ctx } = await setup(config))
    ctx.plugin(toolPlugin(makeTool('top', { maxCallerDepth: 0 }), makeTool('one', { maxCallerDepth: 1 }), makeTool('any')))
    await ctx.lifecycle.flush()
  }

  it('a root agent at depth 0 sees every tool; its child loses maxCallerDepth 0; a grandchild loses maxCallerDepth 1', async () => {
    await withTools()
    const root = ctx.agents.create()
    const child = ctx.agents.create({ parent: root })
    const grandchild = ctx.agents.create({ parent: child })
    expect(names(root)).to.deep.equal(['any', 'one', 'top'])
    expect(names(child)).to.deep.equal(['any', 'one'])
    expect(child.tools.callerDepth).to.equal(1)
    expect(names(grandchild)).to.deep.equal(['any'])
  })

  it('the child\'s model is not offered the hidden tool, and its call by name is answered as an unknown tool', async () => {
    await withTools()
    const requests: GenerateRequest[] = []
    const model = new ScriptedModel([
      { toolCalls: [{ id: 'c1', name: 'top', input: { text: 'x' } }] },
      { text: 'done' },
    ])
    ctx.plugin(modelPlugin('m', { generate: (request) => { requests.push(request); return model.generate(request) } }))
    await ctx.lifecycle.flush()
    const child = ctx.agents.create({ parent: ctx.agents.create({ model: 'm' }) })
    const result = await child.run('go')
    expect(result.stopReason).to.equal('completed')
    expect(requests[0].tools.map((tool) => tool.name).sort()).to.deep.equal(['any', 'one'])
    const answer = child.transcript.messages.find((message) => message.role === 'tool')!
    expect(answer).to.include({ isError: true, content: 'Unknown tool "top". Available tools: one, any.' })
  })

  it('a view passed to create for a child is narrowed too (a provider cannot hand a child the root\'s tools)', async () => {
    await withTools()
    const root = ctx.agents.create()
    expect(names(ctx.agents.create({ parent: root, tools: ctx.tools.view() }))).to.deep.equal(['any', 'one'])
    expect(names(ctx.agents.create({ parent: root, tools: root.tools.restrict({ deny: ['any'] }) }))).to.deep.equal(['one'])
  })

  it('a root agent whose depth comes from the config or SUBAGENT_DEPTH (a served child host) is narrowed like a child', async () => {
    await withTools({ depth: 1 })
    expect(names(ctx.agents.create())).to.deep.equal(['any', 'one'])
    expect(names(ctx.agents.create({ tools: ctx.tools.view() }))).to.deep.equal(['any', 'one'])
    await ctx.stop()
    process.env.SUBAGENT_DEPTH = '2'
    await withTools()
    expect(ctx.agents.rootDepth).to.equal(2)
    expect(names(ctx.agents.create())).to.deep.equal(['any'])
  })

  it('is live: a tool registered after the child was created is hidden from it by its maxCallerDepth', async () => {
    ;({ ctx } = await setup())
    const root = ctx.agents.create()
    const child = ctx.agents.create({ parent: root })
    ctx.plugin(toolPlugin(makeTool('late', { maxCallerDepth: 0 }), makeTool('open')))
    await ctx.lifecycle.flush()
    expect(names(root)).to.deep.equal(['late', 'open'])
    expect(names(child)).to.deep.equal(['open'])
  })
})
