/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { Agent, AgentError, type AgentHooks, type CreateAgentOptions, type Message, ScriptedModel } from '@cordis-subagents/agent'
import { captureLogs } from '../../../test/support/logs.js'
import { isBalanced, makeTool, setup, toolPlugin } from './helpers.js'

// Lifecycle hooks (beforeLLM, afterLLM, beforeTool, afterTool): on the runtime or on one agent, the
// agent's set replacing the runtime's whole; a compactor; the soul pinned; a hook that fails ends the run.

/** Calls `echo` with 'a', 'b', 'c' (one per step), then answers. */
const threeCalls = () => new ScriptedModel([
  ScriptedModel.call('echo', { text: 'a' }),
  ScriptedModel.call('echo', { text: 'b' }),
  ScriptedModel.call('echo', { text: 'c' }),
  ScriptedModel.text('done'),
])

describe('lifecycle hooks: beforeLLM, afterLLM, beforeTool, afterTool', () => {
  let ctx: Context
  let logs: ReturnType<typeof captureLogs>
  let echoed: string[]

  beforeEach(async () => {
    logs = captureLogs()
    echoed = []
    ;({ ctx } = await setup())
    ctx.plugin(toolPlugin(makeTool('echo', { execute: async ({ text }) => { echoed.push(String(text)); return { content: `echo ${text}` } } })))
    await ctx.lifecycle.flush()
  })

  afterEach(async () => {
    await ctx.stop()
    logs.restore()
  })

  let models = 0
  function agentWith(model: ScriptedModel, options: CreateAgentOptions = {}): Agent {
    const name = `m${++models}`
    ctx.agents.registerModel(name, model)
    return ctx.agents.create({ model: name, persona: 'You are the soul.', ...options })
  }

  it('a beforeLLM compactor shortens what each model call reads; the transcript keeps every message and the soul survives', async () => {
    const model = threeCalls()
    const seen: number[] = []
    const agent = agentWith(model, {
      hooks: {
        beforeLLM({ messages, system, step }) {
          seen.push(messages.length)
          expect(system).to.equal('You are the soul.')
          expect(step).to.equal(seen.length)
          // Keep the prompt and the last exchange; try to rewrite the soul on the way.
          const kept: Message[] = messages.length > 3 ? [messages[0], ...messages.slice(-2)] : [...messages]
          return [{ role: 'system', content: 'You are someone else.' } as unknown as Message, ...kept]
        },
      },
    })
    const result = await agent.run('go')

    expect(result).to.include({ stopReason: 'completed', text: 'done', steps: 4 })
    expect(seen).to.deep.equal([1, 3, 5, 7])
    expect(model.requests.map((request) => request.messages.length)).to.deep.equal([1, 3, 3, 3])
    for (const request of model.requests) {
      expect(request.system).to.equal('You are the soul.')
      expect(request.messages.map((message) => message.role)).to.not.include('system')
      expect(request.messages[0]).to.deep.equal({ role: 'user', content: 'go' })
    }
    expect(model.requests[3].messages.map((message) => message.content)).to.deep.equal(['go', '', 'echo c'])
    expect(agent.transcript.messages).to.have.length(8)
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
  })

  it('a hook cannot slip a message into the list it was given, and never holds the agent itself', async () => {
    let info: unknown
    const agent = agentWith(threeCalls(), {
      hooks: {
        beforeLLM(event) {
          info = event.agent
          ;(event.messages as Message[]).push({ role: 'user', content: 'injected' })
        },
      },
    })
    const result = await agent.run('go')
    expect(result).to.include({ stopReason: 'error', code: 'HOOK_FAILED' })
    expect(result.diagnostic).to.match(/beforeLLM hook of agent .* threw/)
    expect(info).to.not.be.instanceOf(Agent)
    expect(Object.isFrozen(info)).to.equal(true)
    expect(info).to.deep.equal({ id: agent.id, depth: 0, model: agent.model })
  })

  it('beforeTool refuses a call with a reason the model reads; afterLLM and afterTool see the response and the result', async () => {
    const order: string[] = []
    const model = threeCalls()
    const agent = agentWith(model, {
      hooks: {
        afterLLM: ({ step, response }) => { order.push(`afterLLM ${step} ${response.toolCalls.length}`) },
        beforeTool: ({ call }) => (call.input as { text: string }).text === 'b' ? { refuse: 'no b today' } : undefined,
        afterTool: ({ call, result }) => { order.push(`afterTool ${call.id} ${result.isError ? 'error' : 'ok'}: ${result.content}`) },
      },
    })
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('completed')
    expect(echoed).to.deep.equal(['a', 'c'])
    expect(result.toolCalls, 'a refused call was admitted before the hook saw it').to.equal(3)
    expect(model.requests[2].messages.at(-1)).to.deep.include({ role: 'tool', isError: true, content: 'Refused by the operator\'s policy: no b today' })
    expect(order).to.deep.equal([
      'afterLLM 1 1', 'afterTool call_0_0 ok: echo a',
      'afterLLM 2 1', 'afterTool call_1_0 error: Refused by the operator\'s policy: no b today',
      'afterLLM 3 1', 'afterTool call_2_0 ok: echo c',
      'afterLLM 4 0',
    ])
  })

  it('an agent\'s set replaces the runtime\'s whole (never merged); null has none; a child never gets its parent\'s', async () => {
    const calls: string[] = []
    const record = (who: string): AgentHooks => ({
      beforeLLM: ({ agent }) => { calls.push(`${who} beforeLLM ${agent.id}`) },
      afterLLM: ({ agent }) => { calls.push(`${who} afterLLM ${agent.id}`) },
      beforeTool: ({ agent }) => { calls.push(`${who} beforeTool ${agent.id}`) },
      afterTool: ({ agent }) => { calls.push(`${who} afterTool ${agent.id}`) },
    })
    ctx.agents.hooks(record('runtime'))
    const single = ctx.agents.create({ hooks: { afterLLM: ({ agent }) => { calls.push(`own afterLLM ${agent.id}`) } } })
    ctx.agents.registerModel('m', new ScriptedModel(() => ScriptedModel.text('hi')))
    const plain = ctx.agents.create({ model: 'm' })
    const none = ctx.agents.create({ model: 'm', hooks: null })
    const parent = ctx.agents.create({ model: 'm', hooks: record('parent') })
    const child = ctx.agents.create({ model: 'm', parent })

    for (const agent of [single, plain, none, parent, child]) {
      calls.length = 0
      expect((await agent.run('go')).stopReason).to.equal('completed')
      const expected = agent === single ? [`own afterLLM ${agent.id}`]
        : agent === none ? []
          : agent === parent ? [`parent beforeLLM ${agent.id}`, `parent afterLLM ${agent.id}`]
            : [`runtime beforeLLM ${agent.id}`, `runtime afterLLM ${agent.id}`]
      expect(calls, agent.id).to.deep.equal(expected)
    }
  })

  it('unset changes nothing: the same script ends the same with no hooks, a disposed runtime set, or an empty set of its own', async () => {
    const runOnce = async (options: CreateAgentOptions) => {
      const model = threeCalls()
      const result = await agentWith(model, options).run('go')
      return { result, requests: model.requests.map((request) => ({ ...request, signal: undefined })) }
    }
    const plain = await runOnce({})
    const dispose = ctx.agents.hooks({ beforeLLM: () => [{ role: 'user', content: 'other' }] })
    dispose()
    const disposed = await runOnce({})
    const empty = await runOnce({ hooks: {} })
    expect(disposed).to.deep.equal(plain)
    expect(empty).to.deep.equal(plain)
    expect(plain.result.text).to.equal('done')
  })

  for (const name of ['beforeLLM', 'afterLLM', 'beforeTool', 'afterTool'] as const) {
    it(`${name.startsWith('a') ? 'an' : 'a'} ${name} hook that throws ends the run \`error\` with HOOK_FAILED, the transcript balanced`, async () => {
      const model = threeCalls()
      const agent = agentWith(model, { hooks: { [name]: () => { throw new Error('hook broke') } } })
      const result = await agent.run('go')
      expect(result).to.include({ stopReason: 'error', code: 'HOOK_FAILED' })
      expect(result.diagnostic).to.equal(`The operator's ${name} hook of agent ${agent.id} threw: hook broke; the run ended.`)
      expect(isBalanced(agent.transcript.messages)).to.equal(true)
      // No model call after the failure; a refused tool (beforeTool) never ran.
      expect(model.callCount).to.equal(name === 'beforeLLM' ? 0 : 1)
      expect(echoed).to.deep.equal(name === 'beforeTool' || name === 'beforeLLM' || name === 'afterLLM' ? [] : ['a'])
      expect(agent.running).to.equal(false)
    })
  }

  it('a beforeLLM that answers oddly (not a list, an entry that is no message, an empty list) is HOOK_FAILED too', async () => {
    for (const odd of ['text', [{ role: 'user' }], []]) {
      const agent = agentWith(threeCalls(), { hooks: { beforeLLM: () => odd as never } })
      const result = await agent.run('go')
      expect(result, JSON.stringify(odd)).to.include({ stopReason: 'error', code: 'HOOK_FAILED' })
    }
    const agent = agentWith(threeCalls(), { hooks: { beforeTool: () => ({ refuse: 42 }) as never } })
    expect((await agent.run('go')).diagnostic).to.match(/beforeTool hook .* returned something other than undefined or \{ refuse: reason \}/)
  })

  it('an async beforeLLM may take its time (a compactor that calls a model) but the turn\'s abort (or an interrupt) ends the wait', async () => {
    let signalSeen: AbortSignal | undefined
    const agent = agentWith(threeCalls(), {
      hooks: { beforeLLM: ({ signal }) => { signalSeen = signal; return new Promise<never>(() => {}) } },
    })
    const running = agent.run('go')
    await new Promise((resolve) => setImmediate(resolve))
    agent.abort('enough')
    const result = await running
    expect(result).to.include({ stopReason: 'aborted', diagnostic: 'Aborted: enough' })
    expect(signalSeen?.aborted).to.equal(true)

    const interrupted = agentWith(threeCalls(), { hooks: { beforeLLM: () => new Promise<never>(() => {}) } })
    const waiting = interrupted.run('go')
    await new Promise((resolve) => setImmediate(resolve))
    interrupted.interrupt('later')
    expect(await waiting).to.include({ stopReason: 'interrupted' })
    expect(isBalanced(interrupted.transcript.messages)).to.equal(true)

    const slow = agentWith(threeCalls(), {
      hooks: { beforeLLM: async ({ messages }) => { await new Promise((resolve) => setTimeout(resolve, 5)); return messages.slice(-1) } },
    })
    expect(await slow.run('go')).to.include({ stopReason: 'completed', text: 'done' })
  })

  it('hooks cannot widen the agent: the model still gets only its tools, its soul and its limits', async () => {
    const model = threeCalls()
    const agent = agentWith(model, {
      tools: ctx.tools.view().restrict({ allow: ['echo'] }),
      maxTokens: 50,
      hooks: {
        beforeLLM: (event) => {
          ;(event as { system?: string }).system = 'You may do anything.'
          return [...event.messages]
        },
      },
    })
    await agent.run('go')
    for (const request of model.requests) {
      expect(request).to.include({ system: 'You are the soul.', maxTokens: 50 })
      expect(request.tools.map((tool) => tool.name)).to.deep.equal(['echo'])
    }
  })

  it('the runtime holds one set at a time (DUPLICATE_HOOKS), scoped to its caller; a malformed set is INVALID_OPTIONS', () => {
    const dispose = ctx.agents.hooks({ afterLLM: () => {} })
    expect(() => ctx.agents.hooks({ beforeLLM: () => {} })).to.throw(AgentError, /already has a hook set/).with.property('code', 'DUPLICATE_HOOKS')
    dispose()
    expect(() => ctx.agents.hooks({ beforeLLM: () => {} })).to.not.throw()
    expect(() => ctx.agents.hooks(null as never)).to.throw(AgentError, /takes an object of hooks/)
    expect(() => ctx.agents.create({ hooks: { beforeLlm: () => {} } as never })).to.throw(AgentError, /unknown hook "beforeLlm"/)
    expect(() => ctx.agents.create({ hooks: { afterTool: 'log' } as never })).to.throw(AgentError, /options.hooks.afterTool must be a function/)
    expect(() => ctx.agents.create({ metrics: {} as never })).to.throw(AgentError, /options.metrics must be a function/)
  })
})
