/// <reference types="mocha" />
import { expect } from 'chai'
import * as Spawn from '@cordis-subagents/provider-spawn'
import type { Agent } from '@cordis-subagents/agent'
import { type Call, type Harness, delegation, probeTool, routed, setup, loadTool } from './helpers.js'

describe('provider-spawn: depth limit', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  it('a grandchild over maxDepth is refused with DEPTH_EXCEEDED as an error tool result; the child still answers', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('child')] } : { text: results[0].content },
      child: ({ step, results }) => step === 0
        ? { toolCalls: [delegation('grandchild')] }
        : { text: `child saw ${results[0].isError ? 'an error' : 'success'}: ${results[0].content}` },
      grandchild: () => { throw new Error('the grandchild must never run') },
    })
    h = await setup({ models: { main: model } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', maxDepth: 1, nested: true })
    await h.ctx.lifecycle.flush()

    const result = await h.ctx.agents.create().run('root task')

    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.match(/^child saw an error: Could not start the subagent\.\n\nDEPTH_EXCEEDED: /)
    // Both numbers: the depth attempted and the limit.
    expect(result.text).to.include('would have depth 2, more than maxDepth 1')
    expect(model.requests.map((r) => r.messages[0].content)).to.deep.equal(['root task', 'child', 'child', 'root task'])
    expect(h.starts.map((info) => info.depth)).to.deep.equal([1])
  })

  it('a recursive chain (every agent delegates again) stops at the cap and every level returns', async () => {
    const seen: Agent[] = []
    // Prompt "level N": probe, delegate "level N+1", then wrap whatever came back.
    const level = ({ prompt, step, results }: Call) => {
      const n = Number(prompt.slice('level '.length))
      if (step === 0) return { toolCalls: [{ name: 'probe', input: {} }, delegation(`level ${n + 1}`)] }
      const below = results[1]
      return { text: below.isError ? `L${n}[${below.content.includes('DEPTH_EXCEEDED') ? 'cap' : 'failed'}]` : `L${n}(${below.content})` }
    }
    const model = routed({}, level)
    h = await setup({ models: { main: model }, tools: [probeTool(seen)] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', maxDepth: 3, nested: true })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create()
    const result = await root.run('level 0')

    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('L0(L1(L2(L3[cap])))')
    expect(seen.map((agent) => agent.depth)).to.deep.equal([0, 1, 2, 3])
    for (let i = 1; i < seen.length; i++) expect(seen[i].parent).to.equal(seen[i - 1])
    expect(h.starts.map((info) => info.depth)).to.deep.equal([1, 2, 3])
    expect(h.ends.map((end) => end.result.stopReason)).to.deep.equal(['completed', 'completed', 'completed'])
    // Every child was released; nothing is left running.
    expect(seen.slice(1).every((agent) => agent.disposed && !agent.running)).to.equal(true)
    expect(h.ctx.subagents.runs()).to.deep.equal([])
  })

  it('counts from the runtime\'s root depth: roots at depth 2 with maxDepth 2 cannot delegate at all', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('child')] } : { text: results[0].content },
    })
    h = await setup({ models: { main: model }, agents: { depth: 2 } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', maxDepth: 2, nested: true })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create()
    expect(root.depth).to.equal(2)
    const result = await root.run('root task')
    expect(result.text).to.include('DEPTH_EXCEEDED')
    expect(result.text).to.include('would have depth 3, more than maxDepth 2')
    expect(h.starts).to.deep.equal([])
  })

  it('without maxDepth the deployment ceiling (default 3) stops the chain with a readable error', async () => {
    const model = routed({}, ({ prompt, step, results }) => {
      const n = Number(prompt.slice('level '.length))
      if (n === 6) return { text: 'bottom' }
      return step === 0 ? { toolCalls: [delegation(`level ${n + 1}`)] } : { text: `${n}>${results[0].content}` }
    })
    h = await setup({ models: { main: model } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', nested: true })
    await h.ctx.lifecycle.flush()

    const result = await h.ctx.agents.create().run('level 0')
    expect(result.text).to.match(/^0>1>2>3>Could not start the subagent\./)
    expect(result.text).to.include('DEPTH_EXCEEDED').and.include('would have depth 4')
    expect(h.starts.map((info) => info.depth)).to.deep.equal([1, 2, 3])
  })

  it('with the service ceiling raised a chain goes as deep as the models take it', async () => {
    const model = routed({}, ({ prompt, step, results }) => {
      const n = Number(prompt.slice('level '.length))
      if (n === 6) return { text: 'bottom' }
      return step === 0 ? { toolCalls: [delegation(`level ${n + 1}`)] } : { text: `${n}>${results[0].content}` }
    })
    h = await setup({ models: { main: model }, subagents: { maxDepth: 10 } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', nested: true })
    await h.ctx.lifecycle.flush()

    const result = await h.ctx.agents.create().run('level 0')
    expect(result.text).to.equal('0>1>2>3>4>5>bottom')
    expect(h.starts.map((info) => info.depth)).to.deep.equal([1, 2, 3, 4, 5, 6])
  })
})
