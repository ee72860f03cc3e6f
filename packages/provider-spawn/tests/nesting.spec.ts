/// <reference types="mocha" />
import { expect } from 'chai'
import * as Spawn from '@cordis-subagents/provider-spawn'
import type { Agent, GenerateRequest } from '@cordis-subagents/agent'
import { type Call, type Harness, delegation, probeTool, routed, setup, loadTool } from './helpers.js'

const names = (request: GenerateRequest) => request.tools.map((tool) => tool.name).sort()

/**
 * Nesting is opt-in per tool load (subagent-tool `nested`): a child of a default load has no
 * delegation tool at all (not listed; a call by name is an unknown tool), and `nested: true` gives
 * it the tool back under the same depth ceiling.
 */
describe('provider-spawn: nesting (subagent-tool `nested`)', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  /** A parent that delegates `prompt` once and answers with the tool result. */
  const relay = (prompt: string, tool = 'subagent') => ({ step, results }: Call) =>
    step === 0 ? { toolCalls: [delegation(prompt, { tool })] } : { text: results[0].content }

  it('by default a child has no `subagent` tool: it is not offered, and a call by name is answered exactly like an unknown tool', async () => {
    const model = routed({
      'root task': relay('child'),
      // The child calls the delegation tool and a tool that does not exist, then reports both answers.
      child: ({ step, results }) => step === 0
        ? { toolCalls: [delegation('grandchild'), { name: 'no_such_tool', input: {} }] }
        : { text: results.map((r) => `${r.isError ? 'error' : 'ok'}: ${r.content}`).join('\n') },
      grandchild: () => { throw new Error('the grandchild must never run') },
    })
    h = await setup({ models: { main: model }, tools: [probeTool([])] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create()
    const result = await root.run('root task')

    expect(result.stopReason).to.equal('completed')
    expect(names(model.requests[0])).to.deep.equal(['probe', 'subagent'])
    const childRequests = model.requests.filter((r) => r.messages[0].content === 'child')
    expect(childRequests).to.have.length(2)
    for (const request of childRequests) expect(names(request)).to.deep.equal(['probe'])
    const [hidden, unknown] = result.text.split('\n')
    expect(hidden).to.equal('error: Unknown tool "subagent". Available tools: probe.')
    expect(unknown).to.equal('error: Unknown tool "no_such_tool". Available tools: probe.')
    expect(h.starts.map((info) => info.depth)).to.deep.equal([1])
  })

  it('`nested: true`: the child delegates, and the depth ceiling still applies below it', async () => {
    const seen: Agent[] = []
    const level = ({ prompt, step, results }: Call) => {
      const n = Number(prompt.slice('level '.length))
      if (step === 0) return { toolCalls: [{ name: 'probe', input: {} }, delegation(`level ${n + 1}`)] }
      const below = results[1]
      return { text: below.isError ? `L${n}[${below.content.includes('DEPTH_EXCEEDED') ? 'cap' : below.content}]` : `L${n}(${below.content})` }
    }
    const model = routed({}, level)
    h = await setup({ models: { main: model }, tools: [probeTool(seen)], subagents: { maxDepth: 2 } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', nested: true })
    await h.ctx.lifecycle.flush()

    const result = await h.ctx.agents.create().run('level 0')
    expect(result.text).to.equal('L0(L1(L2[cap]))')
    expect(seen.map((agent) => agent.depth)).to.deep.equal([0, 1, 2])
    expect(seen.map((agent) => agent.tools.has('subagent'))).to.deep.equal([true, true, true])
    expect(h.starts.map((info) => info.depth)).to.deep.equal([1, 2])
  })

  it('two loads: a child sees only the nested one', async () => {
    const model = routed({
      'root task': relay('child'),
      child: ({ step, results }) => step === 0
        ? { toolCalls: [delegation('via plain'), delegation('via deep', { tool: 'subagent_deep' })] }
        : { text: results.map((r) => `${r.name}:${r.isError ? r.content : 'ok'}`).join(' | ') },
      'via deep': () => ({ text: 'grandchild answered' }),
    })
    h = await setup({ models: { main: model } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    loadTool(h.ctx, { provider: 'spawn', toolName: 'subagent_deep', nested: true })
    await h.ctx.lifecycle.flush()

    const result = await h.ctx.agents.create().run('root task')
    expect(names(model.requests[0])).to.deep.equal(['subagent', 'subagent_deep'])
    const child = model.requests.find((r) => r.messages[0].content === 'child')!
    expect(names(child)).to.deep.equal(['subagent_deep'])
    expect(result.text).to.equal('subagent:Unknown tool "subagent". Available tools: subagent_deep. | subagent_deep:ok')
    expect(h.starts.map((info) => info.depth)).to.deep.equal([1, 2])
  })

  it('a root agent at depth 1 (a host a parent started elsewhere) has only the nested loads', async () => {
    h = await setup({ models: { main: routed({}) }, agents: { depth: 1 } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    loadTool(h.ctx, { provider: 'spawn', toolName: 'subagent_deep', nested: true })
    await h.ctx.lifecycle.flush()
    const root = h.ctx.agents.create()
    expect(root.depth).to.equal(1)
    expect(root.tools.names().sort()).to.deep.equal(['subagent_deep'])
    expect(h.ctx.agents.create({ tools: h.ctx.tools.view() }).tools.names().sort()).to.deep.equal(['subagent_deep'])
  })

  it('is live: reconfiguring the load to `nested: true` gives a child that already exists the tool, and back', async () => {
    h = await setup({ models: { main: routed({}) } })
    h.ctx.plugin(Spawn)
    const fork = loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()
    const root = h.ctx.agents.create()
    const child = h.ctx.agents.create({ parent: root })
    expect(child.tools.has('subagent')).to.equal(false)
    fork.update({ provider: 'spawn', nested: true })
    await h.ctx.lifecycle.flush()
    expect(child.tools.has('subagent')).to.equal(true)
    fork.update({ provider: 'spawn' })
    await h.ctx.lifecycle.flush()
    expect(child.tools.has('subagent')).to.equal(false)
    expect(root.tools.has('subagent')).to.equal(true)
  })
})
