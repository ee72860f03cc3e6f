/// <reference types="mocha" />
import { expect } from 'chai'
import * as Spawn from '@cordis-subagents/provider-spawn'
import type { AgentHooks, MetricRecord } from '@cordis-subagents/agent'
import { type Harness, delegation, loadTool, routed, setup } from './helpers.js'

// Hooks over a real spawn delegation: the parent's own set stays with the parent, and the child (an
// agent created without hooks of its own) runs under the runtime's, forwarded as they are.

/** A host whose root delegates "child task" once to a spawn child that answers at once. */
async function delegatingHost(): Promise<Harness> {
  const model = routed({
    'root task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('child task')] } : { text: `root got ${results[0]?.content}` },
    'child task': () => ({ text: 'child answer' }),
  })
  const h = await setup({ models: { main: model } })
  h.ctx.plugin(Spawn)
  loadTool(h.ctx, { provider: 'spawn' })
  await h.ctx.lifecycle.flush()
  return h
}

describe('provider-spawn: hooks and the metric sink across a delegation', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  it('the child gets the runtime\'s hooks and sink, never its parent\'s own; the parent\'s replace the runtime\'s for the parent only', async () => {
    h = await delegatingHost()

    const heard: string[] = []
    const records: MetricRecord[] = []
    const hooks = (who: string): AgentHooks => ({
      beforeLLM: ({ agent, step, messages }) => {
        heard.push(`${who} beforeLLM depth ${agent.depth} step ${step}`)
        return messages
      },
      beforeTool: ({ agent, call }) => { heard.push(`${who} beforeTool depth ${agent.depth} ${call.name}`) },
    })
    h.ctx.agents.hooks(hooks('runtime'))
    h.ctx.agents.metrics((record) => { records.push(record) })
    const root = h.ctx.agents.create({ hooks: hooks('parent') })
    const result = await root.run('root task')

    expect(result).to.include({ stopReason: 'completed', text: 'root got child answer' })
    expect(heard).to.deep.equal([
      'parent beforeLLM depth 0 step 1',
      'parent beforeTool depth 0 subagent',
      'runtime beforeLLM depth 1 step 1',
      'parent beforeLLM depth 0 step 2',
    ])
    const child = records.find((record) => record.agentId !== root.id)!
    expect(child).to.include({ kind: 'model', parentId: root.id, step: 1, outcome: 'ok' })
    expect(records.map((record) => `${record.agentId === root.id ? 'root' : 'child'} ${record.kind} ${record.name}`)).to.deep.equal([
      'root model main', 'child model main', 'root tool subagent', 'root model main',
    ])
    expect(h.errors).to.deep.equal([])
  })

  it('a hook that fails in the child ends its delegation `error` (status error), and the parent reads that result and goes on', async () => {
    h = await delegatingHost()
    h.ctx.agents.hooks({ afterLLM: ({ agent }) => { if (agent.depth === 1) throw new Error('child policy broke') } })

    const result = await h.ctx.agents.create().run('root task')
    expect(result.stopReason).to.equal('completed')
    expect(h.ends).to.have.length(1)
    expect(h.ends[0].result).to.deep.include({ stopReason: 'error', status: 'error' })
    expect(h.ends[0].result.diagnostic).to.include('afterLLM hook of agent').and.include('child policy broke')
  })
})
