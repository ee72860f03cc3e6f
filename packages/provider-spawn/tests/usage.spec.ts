/// <reference types="mocha" />
import { expect } from 'chai'
import * as Spawn from '@cordis-subagents/provider-spawn'
import type { AgentEvent } from '@cordis-subagents/agent'
import { type Harness, delegation, probeTool, routed, setup, loadTool } from './helpers.js'

const u = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens })

describe('provider-spawn: usage, step limit and progress', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  it('rolls the children\'s usage (grandchildren included) into the parent\'s usage.delegated and total', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0
        ? { toolCalls: [delegation('child A'), delegation('child B')], usage: u(10, 1) }
        : { text: results.map((r) => r.content).join('+'), usage: u(10, 1) },
      'child A': () => ({ text: 'A', usage: u(100, 10) }),
      // B spends 200/20 itself and delegates a grandchild that spends 1000/100.
      'child B': ({ step }) => step === 0
        ? { toolCalls: [delegation('grandchild')], usage: u(100, 10) }
        : { text: 'B', usage: u(100, 10) },
      grandchild: () => ({ text: 'G', usage: u(1000, 100) }),
    })
    h = await setup({ models: { main: model } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', nested: true })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create()
    const result = await root.run('root task')

    expect(result.text).to.equal('A+B')
    expect(root.usage.own).to.deep.equal(u(20, 2))
    expect(root.usage.delegated).to.deep.equal(u(1300, 130))
    expect(root.usage.total).to.deep.equal(u(1320, 132))
    expect(result.usage).to.deep.equal(u(1320, 132))
    // Each run's result carries the child's own usage plus what it delegated.
    const byLabel = Object.fromEntries(h.ends.map((end) => [end.info.label, end.result.usage]))
    expect(byLabel).to.deep.equal({ 'task: child A': u(100, 10), 'task: child B': u(1200, 120), 'task: grandchild': u(1000, 100) })
  })

  it('max-steps: a child that never finishes within maxSteps ends `max-steps`; the tool result names the limit', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0
        ? { toolCalls: [delegation('busy child')] }
        : { text: `${results[0].isError ? 'failed' : 'ok'}: ${results[0].content}` },
      'busy child': ({ step }) => ({ text: `working ${step}`, toolCalls: [{ name: 'probe', input: {} }], usage: u(5, 1) }),
    })
    h = await setup({ models: { main: model }, tools: [probeTool([])] })
    h.ctx.plugin(Spawn, { maxSteps: 3 })
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create()
    const result = await root.run('root task')

    // maxSteps is honoured: exactly three model calls by the child.
    expect(model.requests.filter((r) => r.messages[0].content === 'busy child')).to.have.length(3)
    expect(h.ends).to.have.length(1)
    const end = h.ends[0].result
    expect(end.stopReason).to.equal('max-steps')
    expect(end.stepLimit).to.equal(3)
    expect(end.diagnostic).to.equal('The child hit its step limit (3 steps) without a final answer. Give it a narrower task, or raise `maxSteps` of the "spawn" provider.')
    expect(end.output).to.equal('working 2')
    expect(end.usage).to.deep.equal(u(15, 3))
    // The parent's call is an error result with the diagnostic and the labelled partial output.
    expect(result.text).to.match(/^failed: Subagent stopped: it used all 3 model calls of its turn \(maxSteps\) without a final answer\. .*\n\nDiagnostic: The child hit its step limit \(3 steps\)/)
    expect(result.text).to.include('Partial output (the subagent did not finish; treat this as incomplete):\nworking 2')
    expect(root.usage.delegated).to.deep.equal(u(15, 3))
  })

  it('a child that runs out of tool calls and then answers ends `budget`: the tool result is an error naming the limit', async () => {
    const results: Array<{ isError?: boolean; content: string }> = []
    const model = routed({
      'root task': ({ step, results: [first] }) => {
        if (step > 0) results.push(first)
        return step === 0 ? { toolCalls: [delegation('tool-hungry child')] } : { text: 'parent done' }
      },
      'tool-hungry child': ({ step, request }) => step === 0
        ? { toolCalls: [1, 2, 3].map(() => ({ name: 'probe', input: {} })) }
        : { text: `answer with ${request.tools.length} tools offered` },
    })
    h = await setup({ models: { main: model }, tools: [probeTool([])] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn', budget: { maxToolCalls: 2 } })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create()
    expect((await root.run('root task')).stopReason).to.equal('completed')

    const end = h.ends[0].result
    expect(end.stopReason).to.equal('budget')
    expect(end.budget).to.deep.equal({ budget: 'toolCalls', limit: 2, spent: 2 })
    expect(end.output).to.equal('answer with 0 tools offered')
    expect(results).to.have.length(1)
    expect(results[0].isError).to.equal(true)
    expect(results[0].content).to.match(/^Subagent stopped: the toolCalls budget \(2 tool calls; 2 spent\) ran out\./)
    expect(results[0].content).to.include('Partial output (the subagent did not finish; treat this as incomplete):\nanswer with 0 tools offered')
  })

  it('without maxSteps the child gets the runtime\'s step limit', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('busy child')] } : { text: results[0].content },
      'busy child': () => ({ toolCalls: [{ name: 'probe', input: {} }] }),
    })
    h = await setup({ models: { main: model }, tools: [probeTool([])], agents: { maxSteps: 4 } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    const result = await h.ctx.agents.create().run('root task')
    expect(model.requests.filter((r) => r.messages[0].content === 'busy child')).to.have.length(4)
    expect(result.text).to.include('step limit (4 steps)')
  })

  it('forwards the child\'s progress: subagent/update events and tool-update events on the parent', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('child', { id: 'd' })] } : { text: results[0].content },
      child: ({ step, results }) => step === 0
        ? { text: 'let me look', toolCalls: [{ name: 'probe', input: {} }] }
        : { text: `found ${results[0].content}` },
    })
    h = await setup({ models: { main: model }, tools: [probeTool([])] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    const events: AgentEvent[] = []
    const root = h.ctx.agents.create()
    await root.run('root task', { onEvent: (event) => events.push(event) })

    const updates = h.updates.map(({ update }) => update)
    expect(updates.map((update) => update.kind)).to.deep.equal(['step', 'text', 'tool-call', 'tool-result', 'step', 'text'])
    expect(updates[1]).to.deep.equal({ kind: 'text', text: 'let me look', step: 1 })
    expect(updates[2]).to.deep.equal({ kind: 'tool-call', tool: 'probe', step: 1 })
    expect(updates[3]).to.deep.equal({ kind: 'tool-result', tool: 'probe', isError: false, step: 1 })
    expect(h.updates.every(({ info }) => info.runId === h!.starts[0].runId)).to.equal(true)

    // The same progress reaches the parent's loop as updates of the delegating tool call.
    const toolUpdates = events.filter((event) => event.type === 'tool-update')
    expect(toolUpdates).to.have.length(6)
    for (const event of toolUpdates) expect(event).to.include({ toolCallId: 'd', name: 'subagent' })
    // None of the child's steps show up as the parent's own steps.
    expect(events.filter((event) => event.type === 'step-start')).to.have.length(2)
  })

  it('a child whose model fails reports error with the model\'s failure as the diagnostic', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('child')] } : { text: results[0].content },
      child: () => { throw new Error('upstream 503') },
    })
    h = await setup({ models: { main: model } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    const result = await h.ctx.agents.create().run('root task')
    expect(h.ends[0].result.stopReason).to.equal('error')
    expect(h.ends[0].result.diagnostic).to.include('upstream 503')
    expect(result.text).to.match(/^Subagent failed\./)
    expect(result.text).to.include('upstream 503')
  })

  it('a child that hits the token limit ends max-tokens with its partial output', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('child')] } : { text: results[0].content },
      child: () => ({ text: 'half an answ', finishReason: 'length' }),
    })
    h = await setup({ models: { main: model } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    const result = await h.ctx.agents.create().run('root task')
    expect(h.ends[0].result).to.include({ stopReason: 'max-tokens', output: 'half an answ' })
    expect(result.text).to.match(/^Subagent ran out of output tokens/)
  })
})
