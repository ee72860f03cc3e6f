/// <reference types="mocha" />
import { expect } from 'chai'
import * as Spawn from '@cordis-subagents/provider-spawn'
import type { Agent, GenerateRequest } from '@cordis-subagents/agent'
import type { ToolExecContext } from '@cordis-subagents/tools'
import { type Harness, countingTool, delegation, probeTool, routed, setup, loadTool } from './helpers.js'

const names = (request: GenerateRequest) => request.tools.map((tool) => tool.name).sort()

describe('provider-spawn: the child\'s tools', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  /** A parent that delegates `prompt` once and answers with the tool result. */
  const relay = (prompt: string, tool = 'subagent') => ({ step, results }: { step: number; results: { content: string }[] }) =>
    step === 0 ? { toolCalls: [delegation(prompt, { tool })] } : { text: results[0].content }

  it('without a filter the child sees every tool its parent sees', async () => {
    const secretCalls: ToolExecContext[] = []
    const seen: Agent[] = []
    const model = routed({ 'root task': relay('child'), child: () => ({ text: 'ok' }) })
    h = await setup({ models: { main: model }, tools: [probeTool(seen), countingTool('secret', secretCalls)] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', nested: true })
    await h.ctx.lifecycle.flush()

    await h.ctx.agents.create().run('root task')
    expect(names(model.requests[0])).to.deep.equal(['probe', 'secret', 'subagent'])
    expect(names(model.requests[1])).to.deep.equal(['probe', 'secret', 'subagent'])
  })

  it('toolFilter.deny hides a tool from the child and refuses it when the child calls it anyway', async () => {
    const secretCalls: ToolExecContext[] = []
    const model = routed({
      'root task': relay('child'),
      // The child calls the hidden tool regardless, then reports what it got back.
      child: ({ step, results }) => step === 0
        ? { toolCalls: [{ id: 'x', name: 'secret', input: {} }] }
        : { text: `${results[0].isError ? 'error' : 'ok'}: ${results[0].content}` },
    })
    h = await setup({ models: { main: model }, tools: [probeTool([]), countingTool('secret', secretCalls)] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', toolFilter: { deny: ['secret'] }, nested: true })
    await h.ctx.lifecycle.flush()

    const result = await h.ctx.agents.create().run('root task')

    // Hidden: the parent sees it, the child's model request does not list it.
    expect(names(model.requests[0])).to.include('secret')
    const childRequests = model.requests.filter((r) => r.messages[0].content === 'child')
    expect(childRequests).to.have.length(2)
    for (const request of childRequests) expect(names(request)).to.deep.equal(['probe', 'subagent'])
    // Refused: the call comes back as an unknown-tool error and the tool never runs.
    const answer = childRequests[1].messages[2]
    expect(answer).to.deep.include({ role: 'tool', toolCallId: 'x', name: 'secret', isError: true })
    expect((answer as { content: string }).content).to.match(/^Unknown tool "secret"\. Available tools: probe, subagent\./)
    expect(result.text).to.match(/^error: Unknown tool "secret"/)
    expect(secretCalls).to.deep.equal([])
  })

  it('toolFilter.allow leaves the child only the listed tools (not even the subagent tool)', async () => {
    const secretCalls: ToolExecContext[] = []
    const model = routed({
      'root task': relay('child'),
      child: ({ step, results }) => step === 0
        ? { toolCalls: [{ name: 'secret', input: {} }, delegation('grandchild')] }
        : { text: results.map((r) => `${r.name}:${r.isError ? 'error' : 'ok'}`).join(' ') },
    })
    h = await setup({ models: { main: model }, tools: [probeTool([]), countingTool('secret', secretCalls)] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', toolFilter: { allow: ['probe'] } })
    await h.ctx.lifecycle.flush()

    const result = await h.ctx.agents.create().run('root task')
    const childRequests = model.requests.filter((r) => r.messages[0].content === 'child')
    expect(names(childRequests[0])).to.deep.equal(['probe'])
    expect(result.text).to.equal('secret:error subagent:error')
    expect(secretCalls).to.deep.equal([])
    // The refused subagent call started nothing.
    expect(h.starts).to.have.length(1)
  })

  it('capability ceiling: a child of a restricted parent never sees what the parent cannot, whatever allow says', async () => {
    const secretCalls: ToolExecContext[] = []
    const model = routed({
      'root task': ({ step, results }) => step === 0
        ? { toolCalls: [delegation('plain child', { id: 'p' }), delegation('allowing child', { id: 'a', tool: 'subagent_allow' })] }
        : { text: results.map((r) => r.content).join(' | ') },
      'plain child': ({ step, results }) => step === 0 ? { toolCalls: [{ name: 'secret', input: {} }] } : { text: results[0].content },
      'allowing child': ({ step, results }) => step === 0 ? { toolCalls: [{ name: 'secret', input: {} }] } : { text: results[0].content },
    })
    h = await setup({ models: { main: model }, tools: [probeTool([]), countingTool('secret', secretCalls)] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', nested: true })
    loadTool(h.ctx, { provider: 'spawn', toolName: 'subagent_allow', toolFilter: { allow: ['secret', 'probe'] }, nested: true })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create({ tools: h.ctx.tools.view({ deny: ['secret'] }) })
    const result = await root.run('root task')

    expect(names(model.requests[0])).to.deep.equal(['probe', 'subagent', 'subagent_allow'])
    const requestsOf = (prompt: string) => model.requests.filter((r) => r.messages[0].content === prompt)
    expect(names(requestsOf('plain child')[0])).to.deep.equal(['probe', 'subagent', 'subagent_allow'])
    expect(names(requestsOf('allowing child')[0])).to.deep.equal(['probe'])
    const [plain, allowing] = result.text.split(' | ')
    expect(plain).to.match(/^Unknown tool "secret"/)
    expect(allowing).to.match(/^Unknown tool "secret"/)
    expect(secretCalls).to.deep.equal([])
  })

  it('the ceiling holds down a chain: a grandchild is bounded by its parent\'s filter too', async () => {
    const seen: Agent[] = []
    const model = routed({
      'root task': relay('child'),
      child: relay('grandchild'),
      grandchild: ({ step, results }) => step === 0
        ? { toolCalls: [{ name: 'probe', input: {} }, { name: 'secret', input: {} }] }
        : { text: results.map((r) => `${r.name}:${r.isError ? 'error' : 'ok'}`).join(' ') },
    })
    h = await setup({ models: { main: model }, tools: [probeTool(seen), countingTool('secret', [])] })
    h.ctx.plugin(Spawn)
    // Every delegation through this tool denies `secret`.
    loadTool(h.ctx, { provider: 'spawn', toolFilter: { deny: ['secret'] }, nested: true })
    await h.ctx.lifecycle.flush()

    const result = await h.ctx.agents.create().run('root task')
    expect(result.text).to.equal('probe:ok secret:error')
    expect(seen).to.have.length(1)
    expect(seen[0].depth).to.equal(2)
    expect(seen[0].tools.has('secret')).to.equal(false)
    expect(seen[0].parent!.tools.has('secret')).to.equal(false)
  })

  it('a tool registered while the child runs is visible to it (live view), unless filtered', async () => {
    const model = routed({
      'root task': relay('child'),
      child: async ({ step }) => {
        if (step === 0) {
          h!.ctx.plugin({
            name: 'late-tools',
            inject: ['tools'],
            apply: (ctx) => {
              ctx.tools.register(countingTool('late', []))
              ctx.tools.register(countingTool('late_secret', []))
            },
          })
          return { toolCalls: [{ name: 'late', input: {} }] }
        }
        return { text: 'done' }
      },
    })
    h = await setup({ models: { main: model } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', toolFilter: { deny: ['late_secret'] }, nested: true })
    await h.ctx.lifecycle.flush()

    await h.ctx.agents.create().run('root task')
    const childRequests = model.requests.filter((r) => r.messages[0].content === 'child')
    expect(names(childRequests[0])).to.deep.equal(['subagent'])
    expect(names(childRequests[1])).to.deep.equal(['late', 'subagent'])
    expect(childRequests[1].messages[2]).to.deep.include({ role: 'tool', name: 'late', content: 'late ran' })
  })
})
