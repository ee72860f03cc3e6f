/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import { type Agent, AgentError, type ChatModel, ScriptedModel } from '@cordis-subagents/agent'
import { deferred, isBalanced, setup, tick, toolPlugin } from './helpers.js'

describe('interrupt and wake: host verbs on an agent', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  function agentWith(model: ChatModel): Agent {
    ctx.agents.registerModel('m', model)
    return ctx.agents.create({ model: 'm' })
  }

  it('interrupt ends the running turn `interrupted` (not aborted); the messages its step had read go back to the inbox, in order, and out of the transcript', async () => {
    const thinking = deferred<void>()
    const model = new ScriptedModel([
      { text: 'first turn' },
      async (_request, _index) => { thinking.resolve(); await new Promise(() => {}); return { text: 'never' } },
      { text: 'read them' },
    ])
    const agent = agentWith(model)
    await agent.run('one')
    agent.inbox.post('note 1')
    agent.inbox.post('note 2', { usage: { inputTokens: 5, outputTokens: 5 } })
    const running = agent.run('two')
    await thinking.promise
    agent.inbox.post('note 3')
    agent.interrupt('the operator stepped in')
    const result = await running
    expect(result.stopReason).to.equal('interrupted')
    expect(result.diagnostic).to.match(/^Interrupted: the operator stepped in\./)
    // The delegation's usage was counted by the interrupted turn; it goes back as a plain message.
    expect(result.usage).to.deep.include({ inputTokens: 5, outputTokens: 5 })
    expect(agent.inbox.take()).to.deep.equal([{ content: 'note 1' }, { content: 'note 2' }, { content: 'note 3' }])
    expect(agent.transcript.messages.map((message) => message.content)).to.deep.equal(['one', 'first turn', 'two'])
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
    expect(agent.running).to.equal(false)
    agent.inbox.post('again')
    const next = await agent.run('three')
    expect(next).to.include({ stopReason: 'completed', text: 'read them' })
    expect(agent.usage.delegated).to.deep.include({ inputTokens: 5, outputTokens: 5 })
  })

  it('interrupt during tool calls balances the step (the calls get an error result) and keeps the transcript', async () => {
    const started = deferred<void>()
    const tool = {
      name: 'slow', description: 'never ends', input: z.object({}),
      execute: async (_input: unknown, exec: { signal: AbortSignal }) => {
        started.resolve()
        await new Promise((resolve) => exec.signal.addEventListener('abort', resolve))
        return { content: 'stopped' }
      },
    }
    ctx.plugin(toolPlugin(tool))
    await ctx.lifecycle.flush()
    const agent = agentWith(new ScriptedModel([{ toolCalls: [{ name: 'slow', input: {} }] }]))
    const running = agent.run('go')
    await started.promise
    agent.interrupt()
    const result = await running
    expect(result).to.include({ stopReason: 'interrupted', diagnostic: 'Interrupted. The agent is idle and keeps its transcript; messages it had just read are back in its inbox.' })
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
    expect(agent.transcript.messages).to.have.length(3)
  })

  it('interrupt of an idle or parked agent does nothing', async () => {
    const agent = agentWith(new ScriptedModel([{ text: 'a' }]))
    agent.interrupt()
    expect((await agent.run('go')).stopReason).to.equal('completed')
  })

  it('wake runs a turn on the inbox with no new prompt; EMPTY_INBOX when nothing waits', async () => {
    const model = new ScriptedModel([{ text: 'woke up' }])
    const agent = agentWith(model)
    const empty = await agent.wake().catch((error) => error)
    expect(empty).to.be.instanceOf(AgentError).with.property('code', 'EMPTY_INBOX')
    agent.inbox.post('a background result arrived')
    const result = await agent.wake()
    expect(result).to.include({ stopReason: 'completed', text: 'woke up', steps: 1 })
    expect(model.requests[0].messages).to.deep.equal([{ role: 'user', content: 'a background result arrived' }])
    expect(agent.transcript.completed()).to.have.length(2)
    expect(agent.inbox.size).to.equal(0)
  })

  it('wake while running rejects with BUSY; after dispose with DISPOSED', async () => {
    const gate = deferred<void>()
    const agent = agentWith(new ScriptedModel([async () => { await gate.promise; return { text: 'x' } }]))
    const running = agent.run('go')
    agent.inbox.post('m')
    expect(await agent.wake().catch((error) => error)).to.have.property('code', 'BUSY')
    gate.resolve()
    await running
    await tick()
    await agent.dispose()
    expect(await agent.wake().catch((error) => error)).to.have.property('code', 'DISPOSED')
  })
})
