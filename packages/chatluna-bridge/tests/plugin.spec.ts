// The bridge's entry as the loader sees it, its config, and the mapping between our transcript and
// ChatLuna's (LangChain) messages. The bridge against the real ChatLuna: chatluna.slow.spec.ts.
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import { fromReply, toLangChainTools, toMessageLikes } from '../src/messages.js'
import { matchesPattern } from '../src/tools.js'

describe('@cordis-subagents/koishi-plugin-chatluna-subagents entry (as the loader sees it)', () => {
  it('is a namespace plugin: named name, inject, Config, apply; no default export', async () => {
    const mod = await import('@cordis-subagents/koishi-plugin-chatluna-subagents')
    expect(mod).to.not.have.property('default')
    expect(mod.name).to.equal('chatluna-subagents')
    expect(mod.inject).to.deep.equal(['agents', 'tools', 'chatluna'])
    expect(mod.apply).to.be.a('function')
    expect(mod.Config({})).to.deep.equal({ modelName: 'chatluna', tools: ['subagent*'] })
    expect(() => mod.Config({ defaultModel: 'no-slash' })).to.throw()
  })

  it('waits for ChatLuna: without `chatluna` it registers no model', async () => {
    const mod = await import('@cordis-subagents/koishi-plugin-chatluna-subagents')
    const ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime)
    ctx.plugin(mod, mod.Config({}))
    await ctx.start()
    try {
      expect(ctx.agents.modelNames()).to.not.include('chatluna')
    } finally {
      await ctx.stop()
    }
  })
})

describe('ChatLuna message mapping', () => {
  it('our transcript becomes LangChain message-likes: system, user, assistant tool calls, tool results', () => {
    const likes = toMessageLikes('Be brief.', [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'subagent', input: { description: 'd', prompt: 'p' } }] },
      { role: 'tool', toolCallId: 'c1', name: 'subagent', content: 'done' },
    ])
    expect(likes).to.deep.equal([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'subagent', args: { description: 'd', prompt: 'p' }, type: 'tool_call' }] },
      { role: 'tool', content: 'done', tool_call_id: 'c1', name: 'subagent' },
    ])
  })

  it('a reply maps text parts, tool calls (capped at maxToolCalls, the rest counted), finish reason and usage', () => {
    const reply = {
      content: [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: 'x' }, { type: 'text', text: 'b' }],
      tool_calls: [{ id: 'x', name: 't', args: { n: 1 } }, { name: 't', args: { n: 2 } }, { id: 'z', name: 't', args: { n: 3 } }],
      usage_metadata: { input_tokens: 9, output_tokens: 4 },
    }
    expect(fromReply(reply, { maxToolCalls: 2 })).to.deep.equal({
      text: 'ab',
      toolCalls: [{ id: 'x', name: 't', input: { n: 1 } }, { id: 'chatluna-call-1', name: 't', input: { n: 2 } }],
      finishReason: 'tool-calls',
      usage: { inputTokens: 9, outputTokens: 4 },
      droppedToolCalls: 1,
    })
    expect(fromReply({ content: 'cut', response_metadata: { finish_reason: 'length' } }, {})).to.deep.include({ text: 'cut', finishReason: 'length' })
    expect(fromReply({ content: 'no' , response_metadata: { finish_reason: 'content_filter' } }, {})).to.deep.include({ finishReason: 'refusal' })
    expect(fromReply({ content: 'fine' }, {})).to.deep.equal({ text: 'fine', toolCalls: [], finishReason: 'stop' })
  })

  it('tool specs become LangChain tools with a copy of the (frozen) schema', () => {
    const parameters = Object.freeze({ type: 'object', properties: Object.freeze({ prompt: Object.freeze({ type: 'string' }) }) })
    const [tool] = toLangChainTools([{ name: 'subagent', description: 'Delegate.', parameters }])
    expect(tool.name).to.equal('subagent')
    expect(tool.description).to.equal('Delegate.')
    expect(tool.schema).to.deep.equal(parameters)
    expect(tool.schema).to.not.equal(parameters)
  })

  it('tool name patterns: exact names, and prefixes with a trailing *', () => {
    expect(matchesPattern('subagent_acp', ['subagent*'])).to.equal(true)
    expect(matchesPattern('delegate', ['subagent*'])).to.equal(false)
    expect(matchesPattern('delegate', ['subagent*', 'delegate'])).to.equal(true)
    expect(matchesPattern('delegate_lead', ['delegate'])).to.equal(false)
    expect(matchesPattern('subagent', [])).to.equal(false)
  })
})
