/// <reference types="mocha" />
import { expect } from 'chai'
import * as Spawn from '@cordis-subagents/provider-spawn'
import { SUBAGENT_NOTE } from '@cordis-subagents/provider-spawn'
import type { Agent, Message } from '@cordis-subagents/agent'
import { type Harness, deferred, delegation, probeTool, routed, setup, toolMessages, loadTool } from './helpers.js'

describe('provider-spawn: delegation through the subagent tool', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  it('runs two subagent calls of one step concurrently; the parent gains exactly two tool messages', async function () {
    // Each child's model waits until both children have started: serialised children deadlock.
    this.timeout(5000)
    const started: string[] = []
    const bothStarted = deferred()
    const child = (answer: string) => async ({ prompt, step }: { prompt: string; step: number }) => {
      expect(step).to.equal(0)
      started.push(prompt)
      if (started.length === 2) bothStarted.resolve()
      await bothStarted.promise
      return { text: answer }
    }
    const model = routed({
      'root task': ({ step, results }) => step === 0
        ? { toolCalls: [delegation('child A', { id: 'a' }), delegation('child B', { id: 'b' })] }
        : { text: `done: ${results.map((r) => r.content).join(' + ')}` },
      'child A': child('answer A'),
      'child B': child('answer B'),
    })
    h = await setup({ models: { main: model } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create()
    const result = await root.run('root task')

    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('done: answer A + answer B')
    expect(started).to.have.members(['child A', 'child B'])
    const expected: Message[] = [
      { role: 'user', content: 'root task' },
      { role: 'assistant', content: '', toolCalls: [{ ...delegation('child A'), id: 'a' }, { ...delegation('child B'), id: 'b' }] },
      { role: 'tool', toolCallId: 'a', name: 'subagent', content: 'answer A' },
      { role: 'tool', toolCallId: 'b', name: 'subagent', content: 'answer B' },
      { role: 'assistant', content: 'done: answer A + answer B' },
    ]
    expect(root.transcript.messages).to.deep.equal(expected)
    expect(toolMessages(root.transcript.messages)).to.have.length(2)
    // Four model calls in all: two by the parent, one by each child.
    expect(model.requests).to.have.length(4)
    expect(h.ends.map((end) => end.result.stopReason)).to.deep.equal(['completed', 'completed'])
    expect(h.ctx.subagents.runs()).to.deep.equal([])
    expect(h.errors).to.deep.equal([])
  })

  it('hands the child the prompt alone: a fresh transcript, none of the parent\'s turns', async () => {
    const model = routed({
      'earlier task': () => ({ text: 'earlier answer' }),
      'root task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('standalone brief')] } : { text: results[0].content },
      'standalone brief': () => ({ text: 'child answer' }),
    })
    h = await setup({ models: { main: model } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create()
    await root.run('earlier task')
    const result = await root.run('root task')

    expect(result.text).to.equal('child answer')
    const childRequests = model.requests.filter((request) => request.messages[0].content === 'standalone brief')
    expect(childRequests).to.have.length(1)
    expect(childRequests[0].messages).to.deep.equal([{ role: 'user', content: 'standalone brief' }])
  })

  it('shadows the persona only in the child\'s model request (configured persona + subagent note)', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0
        ? { toolCalls: [delegation('review this', { tool: 'reviewer' }), delegation('plain task')] }
        : { text: results.map((r) => r.content).join('|') },
      'review this': () => ({ text: 'reviewed' }),
      'plain task': () => ({ text: 'plain' }),
    })
    h = await setup({ models: { main: model }, agents: { persona: 'You are the deployment assistant.' } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    loadTool(h.ctx, { provider: 'spawn', toolName: 'reviewer', persona: 'You are a meticulous code reviewer.' })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create()
    const result = await root.run('root task')
    expect(result.text).to.equal('reviewed|plain')

    const systemOf = (prompt: string) => model.requests.filter((r) => r.messages[0].content === prompt).map((r) => r.system)
    // The parent keeps the deployment persona and never sees the child's.
    expect(systemOf('root task')).to.deep.equal(['You are the deployment assistant.', 'You are the deployment assistant.'])
    // The configured persona replaces the deployment persona in the child, and the note is added.
    expect(systemOf('review this')).to.deep.equal([`You are a meticulous code reviewer.\n\n${SUBAGENT_NOTE}`])
    // Without a configured persona the child gets the deployment persona plus the note.
    expect(systemOf('plain task')).to.deep.equal([`You are the deployment assistant.\n\n${SUBAGENT_NOTE}`])
  })

  it('gives a child only the subagent note when no persona is configured anywhere', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('child')] } : { text: results[0].content },
      child: () => ({ text: 'ok' }),
    })
    h = await setup({ models: { main: model } })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    await h.ctx.agents.create().run('root task')
    expect(model.requests[0].system).to.equal(undefined)
    expect(model.requests[1].system).to.equal(SUBAGENT_NOTE)
  })

  it('creates the child below its parent: depth + 1, the parent\'s cwd and model (or agentOptions.model)', async () => {
    const seen: Agent[] = []
    const childRoute = ({ step, results }: { step: number; results: { content: string }[] }) =>
      step === 0 ? { toolCalls: [{ name: 'probe', input: {} }] } : { text: results[0].content }
    const main = routed({
      'root task': ({ step, results }) => step === 0
        ? { toolCalls: [delegation('on main', { id: 'm' }), delegation('on small', { id: 's', tool: 'subagent_small' })] }
        : { text: results.map((r) => r.content).join('|') },
      'on main': childRoute,
    })
    const small = routed({ 'on small': childRoute })
    h = await setup({ models: { main, small }, tools: [probeTool(seen)] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    loadTool(h.ctx, { provider: 'spawn', toolName: 'subagent_small', agentOptions: { model: 'small' } })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create({ model: 'main', cwd: '/tmp/project-x' })
    const result = await root.run('root task')
    expect(result.stopReason).to.equal('completed')

    expect(seen).to.have.length(2)
    for (const child of seen) {
      expect(child.parent).to.equal(root)
      expect(child.depth).to.equal(root.depth + 1)
      expect(child.cwd).to.equal('/tmp/project-x')
      expect(child.id).to.not.equal(root.id)
    }
    expect(seen.map((child) => child.model).sort()).to.deep.equal(['main', 'small'])
    // Each child talked to its own model: 2 parent + 2 child calls on main, 2 child calls on small.
    expect(main.requests.map((r) => r.messages[0].content)).to.deep.equal(['root task', 'on main', 'on main', 'root task'])
    expect(small.requests.map((r) => r.messages[0].content)).to.deep.equal(['on small', 'on small'])
  })

  it('reports events for the run: subagent/start names the provider, parent and child', async () => {
    const seen: Agent[] = []
    const model = routed({
      'root task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('child', { description: 'look around' })] } : { text: results[0].content },
      child: ({ step, results }) => step === 0 ? { toolCalls: [{ name: 'probe', input: {} }] } : { text: `saw ${results[0].content}` },
    })
    h = await setup({ models: { main: model }, tools: [probeTool(seen)] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create()
    await root.run('root task')
    expect(h.starts).to.have.length(1)
    const [info] = h.starts
    expect(info).to.include({ provider: 'spawn', label: 'look around', parentId: root.id, childId: seen[0].id, depth: 1 })
    expect(h.ends).to.have.length(1)
    expect(h.ends[0].result).to.include({ stopReason: 'completed', output: `saw probe: ${seen[0].id} at depth 1` })
    // The child is released once its result is back.
    expect(seen[0].disposed).to.equal(true)
  })
})
