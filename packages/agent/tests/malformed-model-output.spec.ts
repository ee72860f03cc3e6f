import { expect } from 'chai'
import type { ChatModel, GenerateResponse } from '@cordis-subagents/agent'
import { isBalanced, makeTool, modelPlugin, setup, toolPlugin, type Setup } from './helpers.js'

/** Model adapters are third-party code: their mistakes end in a result, never a rejected run. */
describe('agent: model adapter mistakes', () => {
  let s: Setup

  beforeEach(async () => { s = await setup() })
  afterEach(async () => { await s.ctx.stop() })

  function modelFrom(replies: unknown[]): ChatModel {
    let i = 0
    return { generate: async () => replies[i++] as GenerateResponse }
  }

  it('answers malformed tool-call entries with errors, gives every call a unique id, and keeps the transcript balanced', async () => {
    let echoed = 0
    s.ctx.plugin(toolPlugin(makeTool('echo', { execute: ({ text }) => (echoed++, { content: `echo ${text}` }) })))
    s.ctx.plugin(modelPlugin('m', modelFrom([
      {
        text: 'partial',
        finishReason: 'tool-calls',
        toolCalls: [null, 'junk', { name: '' }, { id: 'same', name: 'echo', input: { text: 'a' } }, { id: 'same', name: 'echo', input: { text: 'b' } }],
      },
      { text: 'done', toolCalls: [], finishReason: 'stop' },
    ])))
    await s.ctx.lifecycle.flush()
    const agent = s.ctx.agents.create({ model: 'm' })
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('done')
    expect(echoed).to.equal(2)
    const messages = agent.transcript.messages
    expect(isBalanced(messages)).to.equal(true)
    const calls = messages[1].role === 'assistant' ? messages[1].toolCalls ?? [] : []
    expect(calls).to.have.length(5)
    expect(new Set(calls.map((call) => call.id)).size).to.equal(5)
    const results = messages.filter((m) => m.role === 'tool')
    expect(results.slice(0, 3).every((m) => m.role === 'tool' && m.isError && m.content.includes('malformed tool call'))).to.equal(true)
    expect(results.slice(3).map((m) => m.content)).to.deep.equal(['echo a', 'echo b'])
    expect(agent.transcript.completedMessages()).to.have.length(messages.length)
    await agent.dispose()
  })

  it('keeps ids unique even when a renamed id collides with a later one', async () => {
    s.ctx.plugin(toolPlugin(makeTool('echo')))
    const calls = ['x-2', 'x', 'x', 'x'].map((id) => ({ id, name: 'echo', input: { text: id } }))
    s.ctx.plugin(modelPlugin('m', modelFrom([
      { text: '', finishReason: 'tool-calls', toolCalls: calls },
      { text: 'done', toolCalls: [], finishReason: 'stop' },
    ])))
    await s.ctx.lifecycle.flush()
    const agent = s.ctx.agents.create({ model: 'm' })
    await agent.run('go')
    const assistant = agent.transcript.messages[1]
    const ids = assistant.role === 'assistant' ? (assistant.toolCalls ?? []).map((call) => call.id) : []
    expect(new Set(ids).size).to.equal(4)
    expect(ids[0]).to.equal('x-2')
    expect(ids[1]).to.equal('x')
    const answered = agent.transcript.messages.filter((m) => m.role === 'tool').map((m) => m.role === 'tool' && m.toolCallId)
    expect(answered).to.deep.equal(ids)
    await agent.dispose()
  })

  it('accepts a model whose generate returns a plain object, and dispose still resolves', async () => {
    const model = { generate: () => ({ text: 'plain', toolCalls: [], finishReason: 'stop' }) } as unknown as ChatModel
    s.ctx.plugin(modelPlugin('plain', model))
    await s.ctx.lifecycle.flush()
    const agent = s.ctx.agents.create({ model: 'plain' })
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('plain')
    await agent.dispose()
    expect(agent.disposed).to.equal(true)
  })
})
