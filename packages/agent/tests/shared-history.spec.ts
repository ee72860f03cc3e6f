/// <reference types="mocha" />
import { types } from 'node:util'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { type Agent, type GenerateRequest, type Message, ScriptedModel } from '@cordis-subagents/agent'
import { deferred, makeTool, setup, toolPlugin } from './helpers.js'

describe('shared history: completed turns are shared with fork children and model requests, never copied', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  const contents = (messages: readonly Message[]) => messages.map((m) => m.content)

  it('a child seeded with completed() mid-turn sees the completed turns only, never the turn in flight', async () => {
    const release = deferred<void>()
    let child: Agent | undefined
    ctx.plugin(toolPlugin(makeTool('fork', {
      execute: async (_input, exec) => {
        const parent = exec.agent as Agent
        child = ctx.agents.create({ parent, seed: parent.transcript.completed(), model: 'c' })
        await release.promise
        return { content: 'forked' }
      },
    })))
    await ctx.lifecycle.flush()
    ctx.agents.registerModel('p', new ScriptedModel([
      { text: 'first answer' },
      { toolCalls: [{ id: 'f1', name: 'fork', input: { text: '' } }] },
      { text: 'second answer' },
    ]))
    const childRequests: GenerateRequest[] = []
    ctx.agents.registerModel('c', new ScriptedModel((request) => {
      childRequests.push(request)
      return { text: 'child answer' }
    }))
    const parent = ctx.agents.create({ model: 'p' })
    await parent.run('first question')
    const running = parent.run('second question')
    while (!child) await new Promise((resolve) => setImmediate(resolve))
    // In flight: the parent has the second question and its tool call; the child must not.
    expect(parent.transcript.length).to.equal(4)
    expect(contents(child.transcript.messages)).to.deep.equal(['first question', 'first answer'])
    await child.run('child task')
    release.resolve()
    await running
    await child.dispose()
    // The parent's later turn (its tool call, its result, its answer) did not leak into the child.
    expect(contents(child.transcript.messages)).to.deep.equal(['first question', 'first answer', 'child task', 'child answer'])
    expect(contents(childRequests[0].messages)).to.deep.equal(['first question', 'first answer', 'child task'])
    // ...and the child's own turn did not leak into the parent.
    expect(contents(parent.transcript.messages)).to.deep.equal(['first question', 'first answer', 'second question', '', 'forked', 'second answer'])
  })

  it('shares the parent\'s message objects (no copy per fork) and the views refuse writes', async () => {
    ctx.agents.registerModel('m', new ScriptedModel(() => ({ text: 'answer' })))
    const parent = ctx.agents.create({ model: 'm' })
    await parent.run('q1')
    const completed = parent.transcript.completed()
    const child = ctx.agents.create({ parent, seed: completed, model: 'm' })
    expect(child.transcript.messages[0]).to.equal(parent.transcript.messages[0])
    expect(child.transcript.messages[1]).to.equal(parent.transcript.messages[1])
    expect(Array.isArray(completed)).to.equal(true)
    expect(() => { (completed as Message[]).push({ role: 'user', content: 'x' }) }).to.throw(TypeError)
    expect(() => { (completed as Message[])[0] = { role: 'user', content: 'x' } }).to.throw(TypeError)
    expect(() => { (completed[0] as { content: string }).content = 'edited' }).to.throw(TypeError)
    expect(contents(parent.transcript.messages)).to.deep.equal(['q1', 'answer'])
    // A grandchild forked from the child shares through both levels and still sees only completed turns.
    await child.run('q2')
    const grandchild = ctx.agents.create({ parent: child, seed: child.transcript.completed(), model: 'm' })
    expect(contents(grandchild.transcript.messages)).to.deep.equal(['q1', 'answer', 'q2', 'answer'])
    expect(grandchild.transcript.messages[0]).to.equal(parent.transcript.messages[0])
    expect(JSON.parse(JSON.stringify(grandchild.transcript.messages))).to.deep.equal(grandchild.transcript.completedMessages())
  })

  it('a model request\'s messages do not change when the transcript grows later', async () => {
    const requests: GenerateRequest[] = []
    ctx.agents.registerModel('m', new ScriptedModel((request) => {
      requests.push(request)
      return { text: `answer ${requests.length}` }
    }))
    const agent = ctx.agents.create({ model: 'm' })
    await agent.run('q1')
    await agent.run('q2')
    expect(contents(requests[0].messages)).to.deep.equal(['q1'])
    expect(contents(requests[1].messages)).to.deep.equal(['q1', 'answer 1', 'q2'])
    expect([...requests[1].messages].map((m) => m.role)).to.deep.equal(['user', 'assistant', 'user'])
    expect(requests[1].messages.slice(-1)[0].content).to.equal('q2')
    // A long history is handed over as the request's own copy: stable, and a write reaches nothing else.
    for (let i = 3; i <= 12; i++) await agent.run(`q${i}`)
    const long = requests[11].messages
    expect(long).to.have.length(23)
    await agent.run('q13')
    expect(long).to.have.length(23)
    expect(long[22].content).to.equal('q12')
    expect(JSON.parse(JSON.stringify(long))).to.deep.equal(agent.transcript.completedMessages().slice(0, 23))
    ;(long as Message[]).push({ role: 'user', content: 'x' })
    ;(long as Message[])[0] = { role: 'user', content: 'rewritten' }
    expect(() => { (long[1] as { content: string }).content = 'edited' }).to.throw(TypeError)
    await agent.run('q14')
    expect(requests[13].messages).to.have.length(27)
    expect(requests[13].messages[0].content).to.equal('q1')
    expect(contents(agent.transcript.completed()).slice(0, 3)).to.deep.equal(['q1', 'answer 1', 'q2'])
    expect(agent.transcript.length).to.equal(28)
  })

  it('a model reads plain arrays (no Proxy, at any length), and one turn\'s forks share one frozen completed() array', async () => {
    const requests: GenerateRequest[] = []
    ctx.agents.registerModel('m', new ScriptedModel((request) => {
      requests.push(request)
      return { text: `answer ${requests.length}` }
    }))
    const agent = ctx.agents.create({ model: 'm' })
    for (let i = 1; i <= 30; i++) await agent.run(`q${i}`)
    const long = requests[29].messages
    expect(long).to.have.length(59)
    // A Proxy would make every index read a trap call (the cost a reading adapter paid before), and
    // V8 reads a frozen or sealed array by index 2–3× slower than a plain one: a request gets a plain copy.
    expect(types.isProxy(long)).to.equal(false)
    expect(Object.isExtensible(long)).to.equal(true)
    expect(Object.isFrozen(long[0])).to.equal(true)
    const completed = agent.transcript.completed()
    expect(types.isProxy(completed)).to.equal(false)
    expect(Object.isFrozen(completed)).to.equal(true)
    expect(() => { (completed as Message[])[0] = { role: 'user', content: 'x' } }).to.throw(TypeError)
    expect(agent.transcript.completed()).to.equal(completed)
    const child = ctx.agents.create({ parent: agent, seed: completed, model: 'm' })
    // Before its first turn a fork's completed history is its seed: a grandchild shares the same array.
    expect(child.transcript.completed()).to.equal(completed)
    await child.run('child task')
    const childRequest = requests[30].messages
    expect(types.isProxy(childRequest)).to.equal(false)
    expect(childRequest).to.have.length(61)
    expect(childRequest[0]).to.equal(long[0])
    expect(childRequest[60].content).to.equal('child task')
    await child.dispose()
  })

  it('a seed from a plain array is validated and copied once; completedMessages() still returns editable copies', async () => {
    const seed: Message[] = [{ role: 'user', content: 'old' }, { role: 'assistant', content: 'old answer' }]
    const agent = ctx.agents.create({ seed })
    seed[0].content = 'mutated'
    expect(contents(agent.transcript.messages)).to.deep.equal(['old', 'old answer'])
    const fork = ctx.agents.create({ seed: agent.transcript.completed() })
    const copy = fork.transcript.completedMessages()
    copy[0].content = 'edited'
    expect(contents(fork.transcript.messages)).to.deep.equal(['old', 'old answer'])
    expect(() => ctx.agents.create({ seed: [{ role: 'nobody', content: 'x' } as never] })).to.throw(/seed\[0\]/)
    expect(() => ctx.agents.create({ seed: [{ role: 'user', content: 'ok' }, { role: 'tool' } as never] })).to.throw(/seed\[1\] is not a transcript message/)
    expect(() => ctx.agents.create({ seed: 'old' as never })).to.throw(/options\.seed must be an array/)
    expect(ctx.agents.create({ seed: [] }).transcript.length).to.equal(0)
  })

  it('what a caller can reach (messages, tool-call objects) cannot change what a fork child sees', async () => {
    ctx.agents.registerModel('p', new ScriptedModel([
      { toolCalls: [{ id: 'c1', name: 'missing', input: {} }] },
      { text: 'done' },
    ]))
    const parent = ctx.agents.create({ model: 'p' })
    await parent.run('go')
    const child = ctx.agents.create({ parent, seed: parent.transcript.completed(), model: 'p' })
    const before = JSON.stringify(child.transcript.messages)
    const exposed = parent.transcript.messages as Message[]
    exposed.length = 0 // a copy: the shared storage is untouched
    const call = (parent.transcript.completed().find((m) => m.role === 'assistant' && m.toolCalls) as { toolCalls: Array<{ id: string }> })
      .toolCalls[0]
    expect(() => { call.id = 'changed' }).to.throw(TypeError)
    expect(JSON.stringify(child.transcript.messages)).to.equal(before)
    expect(parent.transcript.messages.length).to.be.greaterThan(0)
  })
})
