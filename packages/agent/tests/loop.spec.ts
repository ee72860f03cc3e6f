/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import type { ToolResult } from '@cordis-subagents/tools'
import {
  Agent, ScriptedModel, type AgentEvent, type ChatModel, type FinishReason, type GenerateRequest, type StopReason,
} from '@cordis-subagents/agent'
import { deferred, isBalanced, makeTool, setup, toolPlugin, work } from './helpers.js'

describe('the tool-calling loop', () => {
  let ctx: Context
  let errors: unknown[]

  beforeEach(async () => {
    ({ ctx, errors } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  function agentWith(model: ChatModel, options: Parameters<Context['agents']['create']>[0] = {}): Agent {
    ctx.agents.registerModel('m', model)
    return ctx.agents.create({ model: 'm', ...options })
  }

  it('a plain answer completes in one step', async () => {
    const model = new ScriptedModel([{ text: 'Hello.' }])
    const agent = agentWith(model)
    const result = await agent.run('Say hello.')
    expect(result).to.deep.equal({
      text: 'Hello.', stopReason: 'completed', usage: { inputTokens: 0, outputTokens: 0 }, steps: 1, toolCalls: 0, work: work(1, 0),
    })
    expect(agent.transcript.messages).to.deep.equal([
      { role: 'user', content: 'Say hello.' },
      { role: 'assistant', content: 'Hello.' },
    ])
    expect(errors).to.deep.equal([])
  })

  it('the model receives the persona as system, the transcript, the visible tools and the signal', async () => {
    ctx.plugin(toolPlugin(makeTool('echo'), makeTool('hidden')))
    await ctx.lifecycle.flush()
    const model = new ScriptedModel([{ text: 'ok' }])
    const agent = agentWith(model, { persona: 'You are terse.', maxTokens: 50, tools: ctx.tools.view({ deny: ['hidden'] }) })
    await agent.run('hi')
    const [request] = model.requests
    expect(request.system).to.equal('You are terse.')
    expect(request.maxTokens).to.equal(50)
    expect(request.signal).to.be.instanceOf(AbortSignal)
    expect(request.messages).to.deep.equal([{ role: 'user', content: 'hi' }])
    expect(request.tools).to.have.length(1)
    expect(request.tools[0]).to.include({ name: 'echo', description: 'The echo tool.' })
    expect(request.tools[0].parameters).to.deep.include({ type: 'object', required: ['text'] })
    expect(request.tools[0].parameters).to.have.nested.property('properties.text.type', 'string')
  })

  it('runs a tool call, appends its result and calls the model again with it', async () => {
    const seen: unknown[] = []
    ctx.plugin(toolPlugin(makeTool('echo', {
      execute: (input, exec) => {
        seen.push({ input, toolCallId: exec.toolCallId, agent: exec.agent })
        return { content: `echo:${(input as { text: string }).text}` }
      },
    })))
    await ctx.lifecycle.flush()
    const model = new ScriptedModel([
      { text: 'Let me check.', toolCalls: [{ id: 'c1', name: 'echo', input: { text: 'ping' } }] },
      (request) => ({ text: `The tool said ${request.messages.at(-1)!.content}.` }),
    ])
    const agent = agentWith(model)
    const result = await agent.run('Ping it.')
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('The tool said echo:ping.')
    expect(result.steps).to.equal(2)
    expect(result.toolCalls).to.equal(1)
    expect(seen).to.deep.equal([{ input: { text: 'ping' }, toolCallId: 'c1', agent }])
    expect(agent.transcript.messages).to.deep.equal([
      { role: 'user', content: 'Ping it.' },
      { role: 'assistant', content: 'Let me check.', toolCalls: [{ id: 'c1', name: 'echo', input: { text: 'ping' } }] },
      { role: 'tool', toolCallId: 'c1', name: 'echo', content: 'echo:ping' },
      { role: 'assistant', content: 'The tool said echo:ping.' },
    ])
    expect(model.requests[1].messages).to.deep.equal(agent.transcript.messages.slice(0, 3))
  })

  it('runs the tool calls of one step concurrently (deadlocks if they were serialized)', async function () {
    this.timeout(5000)
    const aStarted = deferred()
    const bStarted = deferred()
    ctx.plugin(toolPlugin(
      makeTool('a', { execute: async () => { aStarted.resolve(); await bStarted.promise; return { content: 'a done' } } }),
      makeTool('b', { execute: async () => { bStarted.resolve(); await aStarted.promise; return { content: 'b done' } } }),
    ))
    await ctx.lifecycle.flush()
    const agent = agentWith(new ScriptedModel([
      { toolCalls: [{ id: 'ca', name: 'a', input: { text: '' } }, { id: 'cb', name: 'b', input: { text: '' } }] },
      { text: 'both done' },
    ]))
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('both done')
  })

  it('appends results in call order even when a later call finishes first', async () => {
    const bFinished = deferred()
    ctx.plugin(toolPlugin(
      makeTool('slow', { execute: async () => { await bFinished.promise; return { content: 'slow result' } } }),
      makeTool('fast', { execute: () => { bFinished.resolve(); return { content: 'fast result' } } }),
    ))
    await ctx.lifecycle.flush()
    const events: AgentEvent[] = []
    const agent = agentWith(new ScriptedModel([
      { toolCalls: [{ id: 'c1', name: 'slow', input: { text: '' } }, { id: 'c2', name: 'fast', input: { text: '' } }] },
      { text: 'done' },
    ]))
    await agent.run('go', { onEvent: (event) => events.push(event) })
    const toolMessages = agent.transcript.messages.filter((message) => message.role === 'tool')
    expect(toolMessages.map((message) => message.content)).to.deep.equal(['slow result', 'fast result'])
    // The events report completion as it happens: the fast result first.
    const resultEvents = events.filter((event) => event.type === 'tool-result')
    expect(resultEvents.map((event) => (event as { toolCallId: string }).toolCallId)).to.deep.equal(['c2', 'c1'])
  })

  it('answers a call with invalidInput with an error result without executing the tool', async () => {
    let executed = 0
    ctx.plugin(toolPlugin(makeTool('echo', { execute: () => { executed++; return { content: 'ran' } } })))
    await ctx.lifecycle.flush()
    const model = new ScriptedModel([
      { toolCalls: [{ id: 'bad', name: 'echo', input: undefined, invalidInput: 'Unexpected end of JSON input' }] },
      { text: 'recovered' },
    ])
    const agent = agentWith(model)
    const result = await agent.run('go')
    expect(executed).to.equal(0)
    expect(result.stopReason).to.equal('completed')
    const toolMessage = agent.transcript.messages[2]
    expect(toolMessage).to.include({ role: 'tool', toolCallId: 'bad', isError: true })
    expect(toolMessage.content).to.include('Unexpected end of JSON input').and.include('echo')
  })

  it('input that fails the zod schema, an unknown tool and a throwing tool become error results; the run goes on', async () => {
    ctx.plugin(toolPlugin(
      makeTool('echo'),
      makeTool('boom', { execute: () => { throw new Error('disk on fire') } }),
    ))
    await ctx.lifecycle.flush()
    const agent = agentWith(new ScriptedModel([
      {
        toolCalls: [
          { id: 'c1', name: 'echo', input: { text: 42 } },
          { id: 'c2', name: 'nope', input: {} },
          { id: 'c3', name: 'boom', input: { text: 'x' } },
        ],
      },
      { text: 'handled' },
    ]))
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('completed')
    expect(result.toolCalls).to.equal(3)
    const [invalid, unknown, thrown] = agent.transcript.messages.filter((message) => message.role === 'tool')
    expect(invalid).to.include({ toolCallId: 'c1', isError: true })
    expect(invalid.content).to.include('Invalid input').and.include('text')
    expect(unknown).to.include({ toolCallId: 'c2', isError: true })
    expect(unknown.content).to.include('Unknown tool "nope"')
    expect(thrown).to.include({ toolCallId: 'c3', isError: true })
    expect(thrown.content).to.include('disk on fire')
  })

  it('a tool hidden from the agent\'s view is reported like an unknown one and never runs', async () => {
    let executed = 0
    ctx.plugin(toolPlugin(makeTool('secret', { execute: () => { executed++; return { content: 'leak' } } })))
    await ctx.lifecycle.flush()
    const agent = agentWith(new ScriptedModel([
      { toolCalls: [{ id: 'c1', name: 'secret', input: { text: '' } }] },
      { text: 'ok' },
    ]), { tools: ctx.tools.view({ deny: ['secret'] }) })
    await agent.run('go')
    expect(executed).to.equal(0)
    expect(agent.transcript.messages[2]).to.include({ isError: true })
    expect(agent.transcript.messages[2].content).to.include('Unknown tool "secret"')
  })

  describe('finish reasons', () => {
    const cases: [FinishReason, StopReason, RegExp][] = [
      ['stop', 'completed', /^$/],
      ['length', 'max-tokens', /token limit/],
      ['refusal', 'refusal', /refused/],
      ['error', 'error', /reported an error/],
      ['other', 'error', /unrecognised reason/],
    ]
    for (const [finishReason, stopReason, diagnostic] of cases) {
      it(`"${finishReason}" ends the run with ${stopReason}`, async () => {
        const agent = agentWith(new ScriptedModel([{ text: 'partial answer', finishReason }]))
        const result = await agent.run('go')
        expect(result.stopReason).to.equal(stopReason)
        expect(result.text).to.equal('partial answer')
        expect(result.diagnostic ?? '').to.match(diagnostic)
        expect(isBalanced(agent.transcript.messages)).to.equal(true)
      })
    }

    it('a model-provided diagnostic wins over the generic one', async () => {
      const agent = agentWith(new ScriptedModel([{ text: '', finishReason: 'error', diagnostic: 'HTTP 503 from upstream' }]))
      const result = await agent.run('go')
      expect(result).to.include({ stopReason: 'error', diagnostic: 'HTTP 503 from upstream' })
    })

    it('an unknown finish reason from a buggy adapter is an error, not a success', async () => {
      const agent = agentWith({
        generate: async () => ({ text: 'hmm', toolCalls: [], finishReason: 'content_filter' as FinishReason }),
      })
      const result = await agent.run('go')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include('content_filter')
    })

    it('an unknown finish reason of a megabyte is quoted cut (64 characters, on one line)', async () => {
      const agent = agentWith({
        generate: async () => ({ text: 'hmm', toolCalls: [], finishReason: `odd\n${'x'.repeat(1 << 20)}` as FinishReason }),
      })
      const result = await agent.run('go')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.equal(`The model stopped for an unrecognised reason (${JSON.stringify(`odd\n${'x'.repeat(60)}`)}).`)
    })

    for (const finishReason of ['length', 'refusal', 'error', 'other'] as FinishReason[]) {
      it(`"${finishReason}" with tool calls does not run them and leaves the transcript balanced`, async () => {
        let executed = 0
        ctx.plugin(toolPlugin(makeTool('echo', { execute: () => { executed++; return { content: 'ran' } } })))
        await ctx.lifecycle.flush()
        const agent = agentWith(new ScriptedModel([{
          text: 'cut off',
          toolCalls: [{ id: 'c1', name: 'echo', input: { text: 'a' } }, { id: 'c2', name: 'echo', input: { text: 'b' } }],
          finishReason,
        }]))
        const result = await agent.run('go')
        expect(executed).to.equal(0)
        expect(result.text).to.equal('cut off')
        expect(isBalanced(agent.transcript.messages)).to.equal(true)
        const tools = agent.transcript.messages.filter((message) => message.role === 'tool')
        expect(tools.map((message) => [message.toolCallId, message.isError])).to.deep.equal([['c1', true], ['c2', true]])
        expect(tools[0].content).to.include(finishReason)
        expect(agent.transcript.completedMessages()).to.deep.equal(agent.transcript.messages)
      })
    }

    it('a throwing generate ends the run with error and the message in the diagnostic', async () => {
      const agent = agentWith({ generate: async () => { throw new Error('connection refused') } })
      const result = await agent.run('go')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include('connection refused')
      expect(result.diagnostic).to.include('"m"')
      expect(isBalanced(agent.transcript.messages)).to.equal(true)
    })

    it('a generate that throws synchronously is handled the same way', async () => {
      const agent = agentWith({ generate: () => { throw new Error('sync failure') } })
      const result = await agent.run('go')
      expect(result).to.include({ stopReason: 'error' })
      expect(result.diagnostic).to.include('sync failure')
    })

    it('a malformed response (not an object) ends the run with error', async () => {
      const agent = agentWith({ generate: async () => undefined as never })
      const result = await agent.run('go')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include('no response')
    })

    it('a generate error after tool steps keeps the earlier text and a balanced transcript', async () => {
      ctx.plugin(toolPlugin(makeTool('echo')))
      await ctx.lifecycle.flush()
      const agent = agentWith(new ScriptedModel([
        { text: 'working on it', toolCalls: [{ id: 'c1', name: 'echo', input: { text: 'x' } }] },
        () => { throw new Error('rate limited') },
      ]))
      const result = await agent.run('go')
      expect(result).to.include({ stopReason: 'error', text: 'working on it', steps: 2, toolCalls: 1 })
      expect(result.diagnostic).to.include('rate limited')
      expect(isBalanced(agent.transcript.messages)).to.equal(true)
    })
  })

  describe('max-steps', () => {
    it('stops with max-steps after maxSteps model calls, balanced', async () => {
      ctx.plugin(toolPlugin(makeTool('echo')))
      await ctx.lifecycle.flush()
      const model = new ScriptedModel((_, index) => ({ text: `step ${index + 1}`, toolCalls: [{ name: 'echo', input: { text: String(index) } }] }))
      const agent = agentWith(model, { maxSteps: 3 })
      const result = await agent.run('loop forever')
      expect(result.stopReason).to.equal('max-steps')
      expect(result.steps).to.equal(3)
      expect(result.toolCalls).to.equal(3)
      expect(result.text).to.equal('step 3')
      expect(result.diagnostic).to.include('3 steps')
      expect(model.callCount).to.equal(3)
      expect(isBalanced(agent.transcript.messages)).to.equal(true)
    })

    it('the configured maxSteps applies when create does not set one', async () => {
      await ctx.stop()
      ;({ ctx, errors } = await setup({ maxSteps: 2 }))
      ctx.plugin(toolPlugin(makeTool('echo')))
      await ctx.lifecycle.flush()
      const model = new ScriptedModel(() => ({ toolCalls: [{ name: 'echo', input: { text: '' } }] }))
      const result = await agentWith(model).run('go')
      expect(result).to.include({ stopReason: 'max-steps', steps: 2 })
    })

    it('a final answer on the last allowed step completes', async () => {
      ctx.plugin(toolPlugin(makeTool('echo')))
      await ctx.lifecycle.flush()
      const agent = agentWith(new ScriptedModel([
        { toolCalls: [{ name: 'echo', input: { text: '' } }] },
        { text: 'final' },
      ]), { maxSteps: 2 })
      expect(await agent.run('go')).to.include({ stopReason: 'completed', text: 'final', steps: 2 })
    })
  })

  describe('usage', () => {
    it('own usage comes from model responses, delegated from tool results; total = own + delegated', async () => {
      ctx.plugin(toolPlugin(
        makeTool('child', { execute: () => ({ content: 'child answer', usage: { inputTokens: 100, outputTokens: 20 } }) }),
        makeTool('plain'),
      ))
      await ctx.lifecycle.flush()
      const agent = agentWith(new ScriptedModel([
        {
          toolCalls: [{ name: 'child', input: { text: '' } }, { name: 'child', input: { text: '' } }, { name: 'plain', input: { text: '' } }],
          usage: { inputTokens: 10, outputTokens: 2 },
        },
        { text: 'done', usage: { inputTokens: 30, outputTokens: 5, cachedInputTokens: 8 } },
      ]))
      const result = await agent.run('go')
      expect(result.usage).to.deep.equal({ inputTokens: 240, outputTokens: 47, cachedInputTokens: 8 })
      expect(agent.usage.own).to.deep.equal({ inputTokens: 40, outputTokens: 7, cachedInputTokens: 8 })
      expect(agent.usage.delegated).to.deep.equal({ inputTokens: 200, outputTokens: 40 })
      expect(agent.usage.total).to.deep.equal({ inputTokens: 240, outputTokens: 47, cachedInputTokens: 8 })
    })

    it('agent usage accumulates across runs; RunResult.usage counts only its own run', async () => {
      ctx.plugin(toolPlugin(makeTool('child', { execute: () => ({ content: 'x', usage: { inputTokens: 50, outputTokens: 5 } }) })))
      await ctx.lifecycle.flush()
      const agent = agentWith(new ScriptedModel([
        { toolCalls: [{ name: 'child', input: { text: '' } }], usage: { inputTokens: 1, outputTokens: 1 } },
        { text: 'first', usage: { inputTokens: 2, outputTokens: 2 } },
        { text: 'second', usage: { inputTokens: 3, outputTokens: 3 } },
      ]))
      const first = await agent.run('one')
      const second = await agent.run('two')
      expect(first.usage).to.deep.equal({ inputTokens: 53, outputTokens: 8 })
      expect(second.usage).to.deep.equal({ inputTokens: 3, outputTokens: 3 })
      expect(agent.usage.own).to.deep.equal({ inputTokens: 6, outputTokens: 6 })
      expect(agent.usage.delegated).to.deep.equal({ inputTokens: 50, outputTokens: 5 })
      expect(agent.usage.total).to.deep.equal({ inputTokens: 56, outputTokens: 11 })
    })

    it('usage of a failed run is still counted', async () => {
      const agent = agentWith(new ScriptedModel([{ text: 'cut', finishReason: 'length', usage: { inputTokens: 7, outputTokens: 9 } }]))
      const result = await agent.run('go')
      expect(result.usage).to.deep.equal({ inputTokens: 7, outputTokens: 9 })
      expect(agent.usage.total).to.deep.equal({ inputTokens: 7, outputTokens: 9 })
    })
  })

  describe('the one output rule', () => {
    it('is the last non-empty assistant text of the run; a later empty text does not erase it', async () => {
      ctx.plugin(toolPlugin(makeTool('echo')))
      await ctx.lifecycle.flush()
      const agent = agentWith(new ScriptedModel([
        { text: 'first thought', toolCalls: [{ name: 'echo', input: { text: '' } }] },
        { text: 'the answer', toolCalls: [{ name: 'echo', input: { text: '' } }] },
        { text: '   ' },
      ]))
      const result = await agent.run('go')
      expect(result.stopReason).to.equal('completed')
      expect(result.text).to.equal('the answer')
    })

    it('never returns text from a previous run', async () => {
      const agent = agentWith(new ScriptedModel([{ text: 'answer one' }, { text: '' }]))
      expect((await agent.run('one')).text).to.equal('answer one')
      const second = await agent.run('two')
      expect(second.stopReason).to.equal('completed')
      expect(second.text).to.equal('')
    })

    it('seeded assistant text is not returned either', async () => {
      const agent = agentWith(new ScriptedModel([{ text: '' }]), {
        seed: [{ role: 'user', content: 'old' }, { role: 'assistant', content: 'old answer' }],
      })
      expect((await agent.run('new')).text).to.equal('')
    })
  })

  describe('events', () => {
    it('reports step-start, text, step-end, tool-call, tool-update, tool-result in order', async () => {
      ctx.plugin(toolPlugin(makeTool('work', {
        execute: (input, exec) => {
          exec.onUpdate?.({ kind: 'progress', text: 'half way' })
          return { content: 'worked' }
        },
      })))
      await ctx.lifecycle.flush()
      const events: AgentEvent[] = []
      const agent = agentWith(new ScriptedModel([
        { text: 'calling', toolCalls: [{ id: 'c1', name: 'work', input: { text: 'x' } }], usage: { inputTokens: 1, outputTokens: 1 } },
        { text: 'done' },
      ]))
      await agent.run('go', { onEvent: (event) => events.push(event) })
      expect(events).to.deep.equal([
        { type: 'step-start', step: 1 },
        { type: 'text', step: 1, text: 'calling' },
        { type: 'step-end', step: 1, finishReason: 'tool-calls', usage: { inputTokens: 1, outputTokens: 1 } },
        { type: 'tool-call', step: 1, call: { id: 'c1', name: 'work', input: { text: 'x' } } },
        { type: 'tool-update', step: 1, toolCallId: 'c1', name: 'work', update: { kind: 'progress', text: 'half way' } },
        { type: 'tool-result', step: 1, toolCallId: 'c1', name: 'work', result: { content: 'worked' } },
        { type: 'step-start', step: 2 },
        { type: 'text', step: 2, text: 'done' },
        { type: 'step-end', step: 2, finishReason: 'stop', usage: undefined },
      ])
    })

    it('no text event for an empty text', async () => {
      const events: AgentEvent[] = []
      const agent = agentWith(new ScriptedModel([{ text: '' }]))
      await agent.run('go', { onEvent: (event) => events.push(event) })
      expect(events.map((event) => event.type)).to.deep.equal(['step-start', 'step-end'])
    })

    it('a throwing onEvent listener does not break the run', async () => {
      ctx.plugin(toolPlugin(makeTool('work', {
        execute: (input, exec) => { exec.onUpdate?.({ kind: 'progress' }); return { content: 'worked' } },
      })))
      await ctx.lifecycle.flush()
      let calls = 0
      const agent = agentWith(new ScriptedModel([
        { text: 'calling', toolCalls: [{ name: 'work', input: { text: '' } }] },
        { text: 'done' },
      ]))
      const result = await agent.run('go', { onEvent: () => { calls++; throw new Error('listener bug') } })
      expect(result).to.include({ stopReason: 'completed', text: 'done' })
      expect(calls).to.equal(9)
      expect(agent.transcript.messages[2]).to.include({ content: 'worked' })
    })

    it('tool results reach the events as the tool returned them (metadata and usage included)', async () => {
      const returned: ToolResult = { content: 'r', metadata: { runId: 'x' }, usage: { inputTokens: 1, outputTokens: 2 } }
      ctx.plugin(toolPlugin(makeTool('work', { execute: () => returned })))
      await ctx.lifecycle.flush()
      const results: ToolResult[] = []
      const agent = agentWith(new ScriptedModel([{ toolCalls: [{ name: 'work', input: { text: '' } }] }, { text: 'ok' }]))
      await agent.run('go', { onEvent: (event) => { if (event.type === 'tool-result') results.push(event.result) } })
      expect(results).to.deep.equal([returned])
      // The transcript keeps only what the model needs: no metadata, no usage.
      expect(agent.transcript.messages[2]).to.deep.equal({ role: 'tool', toolCallId: 'call_0_0', name: 'work', content: 'r' })
    })
  })

  describe('tools with real zod schemas', () => {
    it('the tool receives zod-parsed input (defaults and coercions applied)', async () => {
      let received: unknown
      ctx.plugin(toolPlugin({
        name: 'search',
        description: 'Search for something.',
        input: z.object({ query: z.string().min(1), limit: z.number().int().default(5) }),
        execute: (input) => { received = input; return { content: 'found' } },
      }))
      await ctx.lifecycle.flush()
      const model = new ScriptedModel([
        { toolCalls: [{ name: 'search', input: { query: 'cats' } }] },
        (request: GenerateRequest) => ({ text: String(request.messages.at(-1)!.content) }),
      ])
      const result = await agentWith(model).run('go')
      expect(received).to.deep.equal({ query: 'cats', limit: 5 })
      expect(result.text).to.equal('found')
      expect(model.requests[0].tools[0].parameters).to.have.nested.property('properties.limit.default', 5)
    })
  })
})
