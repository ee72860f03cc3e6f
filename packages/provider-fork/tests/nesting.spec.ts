/// <reference types="mocha" />
import { expect } from 'chai'
import * as Fork from '@cordis-subagents/provider-fork'
import type { GenerateRequest } from '@cordis-subagents/agent'
import { type Harness, delegation, loadTool, probeTool, routed, setup } from '../../provider-spawn/tests/helpers.js'

const names = (request: GenerateRequest) => request.tools.map((tool) => tool.name).sort()
const lastUser = (request: GenerateRequest) => request.messages.findLast((m) => m.role === 'user')?.content

/**
 * A fork child inherits its parent's completed turns, delegations included, but not the delegation
 * tool: that comes only with `nested: true` on the tool load.
 */
describe('provider-fork: nesting (subagent-tool `nested`)', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  /** Turn 1 of the parent forks "first fork"; turn 2 forks "second fork", which tries to fork again. */
  function model() {
    return routed({
      'first task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('first fork')] } : { text: `first: ${results[0].content}` },
      'first fork': () => ({ text: 'first fork answered' }),
      'second task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('second fork')] } : { text: results[0].content },
      'second fork': ({ step, results }) => step === 0
        ? { toolCalls: [delegation('grandchild fork')] }
        : { text: `${results[0].isError ? 'error' : 'ok'}: ${results[0].content}` },
      'grandchild fork': () => ({ text: 'grandchild answered' }),
    })
  }

  async function load(tool: Record<string, unknown>) {
    const scripted = model()
    h = await setup({ models: { main: scripted }, tools: [probeTool([])] })
    h.ctx.plugin(Fork)
    loadTool(h.ctx, { provider: 'fork', ...tool })
    await h.ctx.lifecycle.flush()
    const root = h.ctx.agents.create()
    await root.run('first task')
    const result = await root.run('second task')
    return { model: scripted, result }
  }

  it('by default the fork child sees its parent\'s earlier delegation in its seed, but has no `subagent` tool (unknown by name)', async () => {
    const { model: scripted, result } = await load({})
    const child = scripted.requests.find((r) => lastUser(r) === 'second fork')!
    // The seed holds the parent's own call of the tool from turn 1 …
    expect(child.messages.some((m) => m.role === 'assistant' && m.toolCalls?.some((c) => c.name === 'subagent'))).to.equal(true)
    // … but the child is not offered the tool, and calling it is an unknown tool.
    expect(names(child)).to.deep.equal(['probe'])
    expect(result.text).to.equal('error: Unknown tool "subagent". Available tools: probe.')
    expect(h!.starts.map((info) => info.depth)).to.deep.equal([1, 1])
  })

  it('`nested: true`: the fork child forks a grandchild, and the depth ceiling still applies', async () => {
    const { model: scripted, result } = await load({ nested: true })
    const child = scripted.requests.find((r) => lastUser(r) === 'second fork')!
    expect(names(child)).to.deep.equal(['probe', 'subagent'])
    expect(result.text).to.equal('ok: grandchild answered')
    expect(h!.starts.map((info) => info.depth)).to.deep.equal([1, 1, 2])
    await h!.ctx.stop()

    const capped = await load({ nested: true, maxDepth: 1 })
    expect(capped.result.text).to.match(/^error: Could not start the subagent\.\n\nDEPTH_EXCEEDED: .*would have depth 2, more than maxDepth 1/)
  })
})
