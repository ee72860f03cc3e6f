// The bridge's entry as the loader sees it, its config, and the mapping between our transcript and
// ChatLuna's (LangChain) messages. The bridge against the real ChatLuna: chatluna.slow.spec.ts.
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import { fromReply, toLangChainTools, toMessageLikes } from '../src/messages.js'
import { matchesPattern } from '../src/tools.js'
import { runDelegation } from '../src/tool-call.js'
import { getEventListeners } from 'node:events'
import { z } from 'zod'

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

describe('a ChatLuna call of a delegation tool', () => {
  it('either side\'s abort reaches the call, and 200 calls leave nothing on the tool\'s own signal (no listener, no dependant)', async () => {
    const ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime)
    await ctx.start()
    const seen: AbortSignal[] = []
    ctx.tools.register({
      name: 'subagent', description: 'Delegates.', input: z.object({ description: z.string(), prompt: z.string() }),
      execute: async (_input, exec) => {
        seen.push(exec.signal)
        return { content: 'done' }
      },
    })
    try {
      const ours = new AbortController()
      const input = { description: 'd', prompt: 'p' }
      for (let i = 0; i < 200; i++) {
        const result = await runDelegation(ctx, {}, { name: 'subagent', input, id: `c${i}` }, { chatluna: new AbortController().signal, ours: ours.signal })
        expect(result.content).to.equal('done')
      }
      expect(getEventListeners(ours.signal, 'abort')).to.have.length(0)
      // Node keeps the signals `AbortSignal.any` made from a source in a set on it (kDependantSignals), one per call on Node 20.
      const dependants = Object.getOwnPropertySymbols(ours.signal).find((symbol) => symbol.description === 'kDependantSignals')
      const kept = dependants ? (ours.signal as unknown as Record<symbol, Set<unknown> | undefined>)[dependants]?.size ?? 0 : 0
      expect(kept, 'signals kept on the tool\'s own signal').to.equal(0)
      // Each side's abort still reaches a call in flight.
      for (const side of ['chatluna', 'ours'] as const) {
        const chatluna = new AbortController()
        const own = new AbortController()
        seen.length = 0
        ctx.tools.register({ name: `hold_${side}`, description: 'Holds.', input: z.object({ description: z.string(), prompt: z.string() }),
          execute: (_input, exec) => new Promise((resolve) => { seen.push(exec.signal); exec.signal.addEventListener('abort', () => resolve({ content: `aborted: ${String(exec.signal.reason)}` })) }) })
        const call = runDelegation(ctx, {}, { name: `hold_${side}`, input, id: side }, { chatluna: chatluna.signal, ours: own.signal })
        while (!seen.length) await new Promise((resolve) => setImmediate(resolve))
        ;(side === 'chatluna' ? chatluna : own).abort(`${side} stopped`)
        expect((await call).content).to.equal(`aborted: ${side} stopped`)
      }
    } finally {
      await ctx.stop()
    }
  })
})
