// End to end over real spawn children: a grandchild asks with ask_parent, the question rides up
// (escalate) or stops at the parent's model (answer), and the answer comes back down.
import { expect } from 'chai'
import { type GenerateRequest, type Message, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import type { SubagentOutcome, SubagentRunInfo } from '@cordis-subagents/subagents-service'
import { startHost, type Host } from './support/host.js'

/** The content of the newest tool message in a model request. */
function lastTool(request: GenerateRequest): string {
  const tools = request.messages.filter((message: Message) => message.role === 'tool')
  return tools.length ? String((tools.at(-1) as { content: unknown }).content) : ''
}

/** Every model call reports 10 input and 1 output tokens. */
const USAGE = { usage: { inputTokens: 10, outputTokens: 1 } }

const hasTool = (request: GenerateRequest) => request.messages.some((message: Message) => message.role === 'tool')

describe('ask, park and resume across a tree of spawn children', () => {
  let host: Host
  let starts: SubagentRunInfo[]
  let ends: [SubagentRunInfo, SubagentOutcome][]

  beforeEach(async () => {
    host = await startHost()
    starts = []
    ends = []
    host.ctx.on('subagent/start', (info) => { starts.push(info) })
    host.ctx.on('subagent/end', (info, outcome) => { ends.push([info, outcome]) })
  })
  afterEach(async () => { await host?.stop() })

  async function load(plugins: [unknown, Record<string, unknown>][]) {
    for (const [plugin, config] of plugins) host.ctx.plugin(plugin as never, config)
    await host.ctx.lifecycle.flush()
  }

  it('three levels, escalate: the root returns pending with the whole path; root.resume(answer) reaches the grandchild', async () => {
    const { ctx } = host
    const grand = new ScriptedModel((request) => hasTool(request)
      ? { text: `Deployed to ${lastTool(request)}.` }
      : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which region?' } }] }, USAGE)
    const child = new ScriptedModel((request) => hasTool(request)
      ? { text: `Child relays: ${lastTool(request)}` }
      : { toolCalls: [{ name: 'deploy', input: { description: 'deploy it', prompt: 'Deploy the service.' } }] }, USAGE)
    const root = new ScriptedModel((request) => hasTool(request)
      ? { text: `Root done: ${lastTool(request)}` }
      : { toolCalls: [{ name: 'subagent', input: { description: 'ship it', prompt: 'Ship the release.' } }] }, USAGE)
    ctx.agents.registerModel('grand', grand)
    ctx.agents.registerModel('child', child)
    ctx.agents.registerModel('root', root)
    await load([
      [Spawn, { name: 'spawn' }],
      [Spawn, { name: 'spawn-ask', askParent: true }],
      [SubagentTool, { provider: 'spawn', questions: 'escalate', agentOptions: { model: 'child' } }],
      [SubagentTool, { provider: 'spawn-ask', toolName: 'deploy', nested: true, questions: 'escalate', agentOptions: { model: 'grand' } }],
    ])
    const agent = ctx.agents.create({ model: 'root' })
    const first = await agent.run('Release v2.')
    expect(first.stopReason).to.equal('pending')
    expect(starts.map((info) => info.provider)).to.deep.equal(['spawn', 'spawn-ask'])
    const [childRun, grandRun] = starts
    expect(childRun.parentId).to.equal(agent.id)
    expect(first.question).to.include({ kind: 'ask', text: 'Which region?' })
    expect(first.question!.path).to.deep.equal([childRun.runId, grandRun.runId])
    expect(agent.parked).to.deep.equal(first.question)
    expect(ctx.subagents.pending().map((parked) => parked.runId).sort()).to.deep.equal([childRun.runId, grandRun.runId].sort())
    expect(ends).to.deep.equal([])
    const calls = [root.callCount, child.callCount, grand.callCount]
    expect(calls).to.deep.equal([1, 1, 1])

    const done = await agent.resume('eu-west')
    expect(done.stopReason).to.equal('completed')
    expect(done.text).to.equal('Root done: Child relays: Deployed to eu-west.')
    // The grandchild's model saw the answer as its ask tool's result.
    expect(lastTool(grand.requests.at(-1)!)).to.equal('eu-west')
    // Each level made one more model call; the turn's tallies grew, never reset.
    expect([root.callCount, child.callCount, grand.callCount]).to.deep.equal([2, 2, 2])
    expect(done.steps).to.equal(first.steps + 1)
    expect(first.usage).to.include({ inputTokens: 10, outputTokens: 1 })
    // Six model calls in all: two per level.
    expect(done.usage).to.include({ inputTokens: 60, outputTokens: 6 })
    expect(done.work.delegated.steps).to.equal(4)
    const ended = Object.fromEntries(ends.map(([info, outcome]) => [info.runId, outcome]))
    expect(ended[grandRun.runId]).to.include({ stopReason: 'completed', output: 'Deployed to eu-west.' })
    expect(ended[grandRun.runId].work.steps).to.equal(2)
    expect(ended[grandRun.runId].usage).to.include({ inputTokens: 20, outputTokens: 2 })
    expect(ended[childRun.runId].work.steps).to.equal(4)
    expect(ended[childRun.runId].usage).to.include({ inputTokens: 40, outputTokens: 4 })
    // One provider start per child, and both are disposed.
    expect(starts).to.have.length(2)
    expect(ctx.subagents.runs()).to.deep.equal([])
    expect(ctx.subagents.pending()).to.deep.equal([])
  })

  it('answer mode: the parent\'s model reads the question from the tool result and answers it with subagent_reply', async () => {
    const { ctx } = host
    const child = new ScriptedModel((request) => hasTool(request)
      ? { text: `Painted it ${lastTool(request)}.` }
      : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] })
    let asked = ''
    const root = new ScriptedModel((request, index) => {
      if (index === 0) return { toolCalls: [{ name: 'subagent', input: { description: 'paint', prompt: 'Paint the shed.' } }] }
      if (index === 1) {
        asked = lastTool(request)
        const handle = /subagent_reply \{ "handle": "([^"]+)"/.exec(asked)![1]
        return { toolCalls: [{ name: 'subagent_reply', input: { handle, answer: 'blue' } }] }
      }
      return { text: `Root: ${lastTool(request)}` }
    })
    ctx.agents.registerModel('child', child)
    ctx.agents.registerModel('root', root)
    await load([
      [Spawn, { name: 'spawn', askParent: true }],
      [SubagentTool, { provider: 'spawn', agentOptions: { model: 'child' } }],
      [SubagentControl, {}],
    ])
    const agent = ctx.agents.create({ model: 'root' })
    const result = await agent.run('Get the shed painted.')
    expect(result.stopReason).to.equal('completed')
    expect(asked).to.match(/^Subagent run-\S+ asks you a question and waits for your answer/)
    expect(asked).to.include('Which colour?')
    expect(result.text).to.equal('Root: Painted it blue.')
    expect(starts).to.have.length(1)
    expect(ends.map(([, outcome]) => outcome.stopReason)).to.deep.equal(['completed'])
    expect(ctx.subagents.runs()).to.deep.equal([])
  })

  it('background: a child\'s question comes back as its result; the parent answers it with subagent_reply', async () => {
    const { ctx } = host
    const child = new ScriptedModel((request) => hasTool(request)
      ? { text: `Used port ${lastTool(request)}.` }
      : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which port?' } }] })
    let collected = ''
    const root = new ScriptedModel((request, index) => {
      if (index === 0) return { toolCalls: [{ name: 'subagent', input: { description: 'serve', prompt: 'Start the server.' } }] }
      if (index === 1) return { toolCalls: [{ name: 'subagent_wait', input: { handles: ['bg-1'] } }] }
      if (index === 2) {
        collected = lastTool(request)
        const handle = /subagent_reply \{ "handle": "([^"]+)"/.exec(collected)![1]
        return { toolCalls: [{ name: 'subagent_reply', input: { handle, answer: '8080' } }] }
      }
      return { text: `Root: ${lastTool(request)}` }
    })
    ctx.agents.registerModel('child', child)
    ctx.agents.registerModel('root', root)
    await load([
      [Spawn, { name: 'spawn', askParent: true }],
      [SubagentTool, { provider: 'spawn', mode: 'background', agentOptions: { model: 'child' } }],
      [SubagentControl, {}],
    ])
    const agent = ctx.agents.create({ model: 'root' })
    const result = await agent.run('Serve it.')
    expect(collected).to.include('[Background subagent bg-1 "serve" asks a question]')
    expect(collected).to.include('Which port?')
    expect(result.text).to.equal('Root: Used port 8080.')
    expect(starts).to.have.length(1)
    expect(ctx.subagents.runs()).to.deep.equal([])
  })

  it('a reply to a handle that is not a parked child of the caller is an error result; nothing is resumed', async () => {
    const { ctx } = host
    const root = new ScriptedModel([
      { toolCalls: [{ name: 'subagent_reply', input: { handle: 'run-nope', answer: 'yes' } }] },
      { text: 'ok' },
    ])
    ctx.agents.registerModel('root', root)
    await load([[SubagentControl, {}]])
    const agent = ctx.agents.create({ model: 'root' })
    await agent.run('Try.')
    expect(lastTool(root.requests[1])).to.equal('You have no parked subagent "run-nope": it was answered already, ended, or is not yours.')
  })

  it('reattach: the same task called twice gets the first child\'s answer; the provider starts one child', async () => {
    const { ctx } = host
    const child = new ScriptedModel([{ text: 'Report: all green.' }])
    const call = { name: 'subagent', input: { description: 'check', prompt: 'Check the build.' } }
    const root = new ScriptedModel([{ toolCalls: [call] }, { toolCalls: [call] }, { text: 'done' }])
    ctx.agents.registerModel('child', child)
    ctx.agents.registerModel('root', root)
    await load([
      [Spawn, { name: 'spawn' }],
      [SubagentTool, { provider: 'spawn', reattach: true, agentOptions: { model: 'child' } }],
    ])
    const agent = ctx.agents.create({ model: 'root' })
    expect((await agent.run('Check twice.')).stopReason).to.equal('completed')
    expect(lastTool(root.requests[1])).to.equal('Report: all green.')
    expect(lastTool(root.requests[2])).to.equal('Report: all green.')
    expect(starts).to.have.length(1)
    expect(child.callCount).to.equal(1)
  })
})
