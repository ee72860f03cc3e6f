/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import {
  Agent, AgentError, MAX_INBOX_MESSAGES, ScriptedModel, type AgentEvent, type ChatModel,
} from '@cordis-subagents/agent'
import { deferred, isBalanced, setup, tick, toolPlugin } from './helpers.js'

describe('the agent inbox (messages from outside the turn, holds)', () => {
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

  it('a message posted while the model thinks is read, as a user message, before the next model call', async () => {
    const gate = deferred<void>()
    const tool = {
      name: 'slow', description: 'waits', input: z.object({}),
      execute: async () => { await gate.promise; return { content: 'slow done' } },
    }
    ctx.plugin(toolPlugin(tool))
    await ctx.lifecycle.flush()
    const model = new ScriptedModel([{ toolCalls: [{ name: 'slow', input: {} }] }, { text: 'final' }])
    const agent = agentWith(model)
    const events: AgentEvent[] = []
    const running = agent.run('go', { onEvent: (event) => events.push(event) })
    await tick()
    agent.inbox.post('[note] the build is green')
    gate.resolve()
    const result = await running
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('final')
    expect(model.requests[1].messages.slice(-2)).to.deep.equal([
      { role: 'tool', toolCallId: 'call_0_0', name: 'slow', content: 'slow done' },
      { role: 'user', content: '[note] the build is green' },
    ])
    expect(events.filter((event) => event.type === 'message')).to.deep.equal([{ type: 'message', step: 2, content: '[note] the build is green' }])
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
    expect(agent.inbox.size).to.equal(0)
  })

  it('a turn that would end with a message waiting takes one more step with it', async () => {
    const agent = agentWith(new ScriptedModel([
      () => { agent.inbox.post('one more thing'); return { text: 'first answer' } },
      { text: 'second answer' },
    ]))
    const result = await agent.run('go')
    expect(result).to.include({ stopReason: 'completed', text: 'second answer', steps: 2 })
    expect(agent.transcript.completed().map((message) => message.content)).to.deep.equal(['go', 'first answer', 'one more thing', 'second answer'])
  })

  it('an open hold keeps the turn from ending; what is posted before the release is read, then the turn ends', async () => {
    const model = new ScriptedModel([{ text: 'started work' }, { text: 'got the result' }])
    const agent = agentWith(model)
    const release = agent.inbox.hold()
    const events: AgentEvent[] = []
    const running = agent.run('go', { onEvent: (event) => events.push(event) })
    await tick()
    expect(agent.running).to.equal(true)
    expect(events.at(-1)).to.deep.equal({ type: 'waiting', step: 1, holds: 1 })
    agent.inbox.post('[result] 42')
    release()
    const result = await running
    expect(result).to.include({ stopReason: 'completed', text: 'got the result', steps: 2 })
    expect(model.requests[1].messages.at(-1)).to.deep.equal({ role: 'user', content: '[result] 42' })
  })

  it('a hold released with nothing posted lets the turn end as it was', async () => {
    const agent = agentWith(new ScriptedModel([{ text: 'done' }]))
    const release = agent.inbox.hold()
    const running = agent.run('go')
    await tick()
    expect(agent.running).to.equal(true)
    release()
    release()
    expect(await running).to.include({ stopReason: 'completed', text: 'done', steps: 1 })
  })

  it('aborting a turn that waits on a hold ends it aborted, and the hold stays for the owner to release', async () => {
    const agent = agentWith(new ScriptedModel([{ text: 'waiting' }]))
    agent.inbox.hold()
    const controller = new AbortController()
    const running = agent.run('go', { signal: controller.signal })
    await tick()
    controller.abort(new Error('user pressed Ctrl-C'))
    const result = await running
    expect(result.stopReason).to.equal('aborted')
    expect(result.diagnostic).to.contain('Ctrl-C')
    expect(agent.inbox.held).to.equal(1)
  })

  it('dispose ends a waiting turn as aborted (not completed) and closes the inbox', async () => {
    const agent = agentWith(new ScriptedModel([{ text: 'waiting' }]))
    agent.inbox.hold()
    const running = agent.run('go')
    await tick()
    await agent.dispose()
    expect((await running).stopReason).to.equal('aborted')
    expect(() => agent.inbox.post('late')).to.throw(AgentError).with.property('code', 'DISPOSED')
    expect(() => agent.inbox.hold()).to.throw(AgentError).with.property('code', 'DISPOSED')
  })

  it('a message posted between turns is read at the next turn, after its prompt', async () => {
    const model = new ScriptedModel([{ text: 'a' }, { text: 'b' }])
    const agent = agentWith(model)
    await agent.run('first')
    agent.inbox.post('meanwhile')
    await agent.run('second')
    expect(model.requests[1].messages.slice(-2)).to.deep.equal([
      { role: 'user', content: 'second' },
      { role: 'user', content: 'meanwhile' },
    ])
  })

  it('with no step left the answer stands: messages posted meanwhile and open holds wait for the next turn', async () => {
    const model = new ScriptedModel([() => { agent.inbox.post('left for later'); return { text: 'the answer' } }, { text: 'next' }])
    ctx.agents.registerModel('m', model)
    const agent = ctx.agents.create({ model: 'm', maxSteps: 1 })
    const release = agent.inbox.hold()
    expect(await agent.run('go')).to.include({ stopReason: 'completed', text: 'the answer', steps: 1 })
    expect(agent.inbox.size).to.equal(1)
    release()
    await agent.run('again')
    expect(model.requests[1].messages.slice(-2)).to.deep.equal([
      { role: 'user', content: 'again' },
      { role: 'user', content: 'left for later' },
    ])
  })

  it('refuses bad and unbounded posts with codes that say what to do', () => {
    const agent = agentWith(new ScriptedModel([]))
    expect(() => agent.inbox.post('   ')).to.throw(AgentError).with.property('code', 'INVALID_PROMPT')
    expect(() => agent.inbox.post(42 as never)).to.throw(AgentError).with.property('code', 'INVALID_PROMPT')
    expect(() => agent.inbox.post('x'.repeat((1 << 20) + 1))).to.throw(/at most/)
    for (let i = 0; i < MAX_INBOX_MESSAGES; i++) agent.inbox.post(`m${i}`)
    expect(() => agent.inbox.post('one too many')).to.throw(AgentError).with.property('code', 'INBOX_FULL')
    expect(agent.inbox.size).to.equal(MAX_INBOX_MESSAGES)
  })

  it('a message carrying a delegation rolls its usage and work into the turn and the agent when it is read', async () => {
    const model = new ScriptedModel([
      () => {
        agent.inbox.post('[a background result]', { usage: { inputTokens: 7, outputTokens: 3 }, work: { steps: 2, toolCalls: 1, delegations: 0 } })
        return { text: 'first', usage: { inputTokens: 1, outputTokens: 1 } }
      },
      { text: 'second', usage: { inputTokens: 1, outputTokens: 1 } },
    ])
    const agent = agentWith(model)
    const result = await agent.run('go')
    expect(result.usage).to.deep.equal({ inputTokens: 9, outputTokens: 5 })
    expect(result.work).to.deep.equal({
      own: { steps: 2, toolCalls: 0, delegations: 1 }, delegated: { steps: 2, toolCalls: 1, delegations: 0 },
    })
    expect(agent.usage.delegated).to.deep.equal({ inputTokens: 7, outputTokens: 3 })
    expect(agent.work.own.delegations).to.equal(1)
  })

  it('onClose listeners run once when the agent is disposed (a late one at once), and can unsubscribe', async () => {
    const agent = agentWith(new ScriptedModel([]))
    const calls: string[] = []
    agent.inbox.onClose(() => calls.push('a'))
    const off = agent.inbox.onClose(() => calls.push('b'))
    agent.inbox.onClose(() => { throw new Error('a broken listener') })
    agent.inbox.onClose(() => calls.push('c'))
    off()
    await agent.dispose()
    expect(calls).to.deep.equal(['a', 'c'])
    agent.inbox.onClose(() => calls.push('late'))
    await tick()
    expect(calls).to.deep.equal(['a', 'c', 'late'])
  })
})
