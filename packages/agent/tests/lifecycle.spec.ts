/// <reference types="mocha" />
import { getEventListeners } from 'node:events'
import { expect } from 'chai'
import type { Context } from 'cordis'
import type { ToolResult } from '@cordis-subagents/tools'
import {
  Agent, AgentError, ScriptedModel, type AgentEvent, type ChatModel, type GenerateResponse, type Message, type RunResult,
} from '@cordis-subagents/agent'
import { deferred, isBalanced, makeTool, setup, tick, toolPlugin, work } from './helpers.js'

async function rejection(promise: Promise<unknown>): Promise<AgentError> {
  try {
    await promise
  } catch (error) {
    return error as AgentError
  }
  throw new Error('expected the promise to reject')
}

describe('agent lifecycle: abort, turns, BUSY, dispose', () => {
  let ctx: Context
  const agents: Agent[] = []

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.dispose()))
    await ctx.stop()
  })

  function agentWith(model: ChatModel, options: Parameters<Context['agents']['create']>[0] = {}): Agent {
    ctx.agents.registerModel('m', model)
    const agent = ctx.agents.create({ model: 'm', ...options })
    agents.push(agent)
    return agent
  }

  describe('abort', () => {
    it('a pre-aborted signal ends the run as aborted without calling the model', async () => {
      const model = new ScriptedModel([{ text: 'never' }])
      const agent = agentWith(model)
      const controller = new AbortController()
      controller.abort('not needed any more')
      const events: AgentEvent[] = []
      const result = await agent.run('go', { signal: controller.signal, onEvent: (event) => events.push(event) })
      expect(result).to.deep.equal({
        text: '', stopReason: 'aborted', diagnostic: 'Aborted: not needed any more',
        usage: { inputTokens: 0, outputTokens: 0 }, steps: 0, toolCalls: 0, work: work(0, 0),
      })
      expect(model.callCount).to.equal(0)
      expect(events).to.deep.equal([])
      expect(agent.running).to.equal(false)
      expect(isBalanced(agent.transcript.messages)).to.equal(true)
    })

    it('aborting during a model call that ignores its signal still ends the run promptly as aborted', async () => {
      const called = deferred()
      const late = deferred<GenerateResponse>()
      const agent = agentWith({ generate: () => { called.resolve(); return late.promise } })
      const controller = new AbortController()
      const running = agent.run('go', { signal: controller.signal })
      await called.promise
      controller.abort(new Error('user pressed stop'))
      const result = await running
      expect(late.settled).to.equal(false) // the model never answered
      expect(result).to.include({ stopReason: 'aborted', diagnostic: 'Aborted: user pressed stop', text: '', steps: 1 })
      expect(agent.running).to.equal(false)
      // The late answer is dropped: it never enters the transcript.
      late.resolve({ text: 'too late', toolCalls: [{ id: 'x', name: 'echo', input: {} }], finishReason: 'tool-calls' })
      await agent.dispose()
      expect(agent.transcript.messages).to.deep.equal([{ role: 'user', content: 'go' }])
    })

    it('aborting a model that honours its signal ends the run as aborted', async () => {
      const called = deferred()
      const agent = agentWith(new ScriptedModel(() => { called.resolve(); return new Promise(() => {}) }))
      const controller = new AbortController()
      const running = agent.run('go', { signal: controller.signal })
      await called.promise
      controller.abort()
      const result = await running
      expect(result).to.include({ stopReason: 'aborted', diagnostic: 'Aborted.' })
    })

    it('aborting mid-step while tools run leaves a balanced transcript and keeps the partial text', async () => {
      const slowStarted = deferred()
      const fastDone = deferred()
      const slowRelease = deferred<ToolResult>()
      let slowFinished = false
      ctx.plugin(toolPlugin(
        makeTool('fast'),
        makeTool('slow', {
          execute: async () => {
            slowStarted.resolve()
            const result = await slowRelease.promise // ignores the signal on purpose
            slowFinished = true
            return result
          },
        }),
      ))
      await ctx.lifecycle.flush()
      const model = new ScriptedModel([
        {
          text: 'Partial thoughts.',
          toolCalls: [{ id: 'c1', name: 'fast', input: { text: 'x' } }, { id: 'c2', name: 'slow', input: { text: 'y' } }],
          usage: { inputTokens: 3, outputTokens: 4 },
        },
        { text: 'never reached' },
      ])
      const agent = agentWith(model)
      const controller = new AbortController()
      const events: AgentEvent[] = []
      const running = agent.run('go', {
        signal: controller.signal,
        onEvent: (event) => {
          events.push(event)
          if (event.type === 'tool-result' && event.toolCallId === 'c1') fastDone.resolve()
        },
      })
      await Promise.all([slowStarted.promise, fastDone.promise])
      controller.abort('stop now')
      const result = await running
      expect(result).to.deep.equal({
        text: 'Partial thoughts.', stopReason: 'aborted', diagnostic: 'Aborted: stop now',
        usage: { inputTokens: 3, outputTokens: 4 }, steps: 1, toolCalls: 2, work: work(1, 2),
      })
      expect(model.callCount).to.equal(1)
      expect(slowFinished).to.equal(false)
      const messages = agent.transcript.messages
      expect(isBalanced(messages)).to.equal(true)
      expect(messages[2]).to.deep.equal({ role: 'tool', toolCallId: 'c1', name: 'fast', content: 'fast:x' })
      expect(messages[3]).to.include({ role: 'tool', toolCallId: 'c2', name: 'slow', isError: true })
      expect(messages[3].content).to.match(/aborted/i)
      expect(agent.transcript.completedMessages()).to.deep.equal(messages)
      // Every call got exactly one result event.
      expect(events.filter((event) => event.type === 'tool-result')).to.have.length(2)
      slowRelease.resolve({ content: 'late' })
      await agent.dispose()
      expect(slowFinished).to.equal(true)
      expect(agent.transcript.messages).to.have.length(4)
    })

    it('a tool sees the abort through exec.signal', async () => {
      const started = deferred()
      let sawAbort: unknown
      ctx.plugin(toolPlugin(makeTool('wait', {
        execute: (_, exec) => new Promise<ToolResult>((resolve) => {
          started.resolve()
          exec.signal.addEventListener('abort', () => {
            sawAbort = exec.signal.reason
            resolve({ content: 'stopped', isError: true })
          }, { once: true })
        }),
      })))
      await ctx.lifecycle.flush()
      const agent = agentWith(new ScriptedModel([{ toolCalls: [{ name: 'wait', input: { text: '' } }] }]))
      const controller = new AbortController()
      const running = agent.run('go', { signal: controller.signal })
      await started.promise
      controller.abort('enough')
      expect((await running).stopReason).to.equal('aborted')
      expect(sawAbort).to.equal('enough')
    })

    it('an abort after the run ended changes nothing and leaves no listener on the signal', async () => {
      const agent = agentWith(new ScriptedModel([{ text: 'done' }, { text: 'again' }]))
      const controller = new AbortController()
      const result = await agent.run('go', { signal: controller.signal })
      expect(getEventListeners(controller.signal, 'abort')).to.have.length(0)
      controller.abort()
      expect(result.stopReason).to.equal('completed')
      expect((await agent.run('next')).stopReason).to.equal('completed')
    })

    it('the next turn after an aborted one starts from the balanced transcript', async () => {
      const started = deferred()
      ctx.plugin(toolPlugin(makeTool('hang', { execute: async (_, exec) => {
        started.resolve()
        await new Promise((resolve) => exec.signal.addEventListener('abort', resolve, { once: true }))
        return { content: 'unused' }
      } })))
      await ctx.lifecycle.flush()
      const model = new ScriptedModel([
        { toolCalls: [{ id: 'h1', name: 'hang', input: { text: '' } }] },
        { text: 'second turn answer' },
      ])
      const agent = agentWith(model)
      const controller = new AbortController()
      const running = agent.run('first', { signal: controller.signal })
      await started.promise
      controller.abort()
      expect((await running).stopReason).to.equal('aborted')
      const second = await agent.run('second')
      expect(second).to.include({ stopReason: 'completed', text: 'second turn answer' })
      expect(isBalanced(model.requests[1].messages)).to.equal(true)
      expect(model.requests[1].messages.map((message) => message.role)).to.deep.equal(['user', 'assistant', 'tool', 'user'])
    })
  })

  describe('turns and completedMessages()', () => {
    it('excludes the running turn (seen from inside a tool) and includes it once the turn ended', async () => {
      const seen: { completed: Message[]; all: number }[] = []
      let agent!: Agent
      ctx.plugin(toolPlugin(makeTool('look', {
        execute: (_, exec) => {
          expect(exec.agent).to.equal(agent)
          seen.push({ completed: agent.transcript.completedMessages(), all: agent.transcript.messages.length })
          return { content: 'looked' }
        },
      })))
      await ctx.lifecycle.flush()
      agent = agentWith(new ScriptedModel([
        { toolCalls: [{ id: 'a', name: 'look', input: { text: '' } }] },
        { text: 'answer one' },
        { toolCalls: [{ id: 'b', name: 'look', input: { text: '' } }] },
        { text: 'answer two' },
      ]))
      await agent.run('one')
      const afterFirst = agent.transcript.completedMessages()
      expect(afterFirst).to.have.length(4)
      expect(afterFirst).to.deep.equal(agent.transcript.messages)
      await agent.run('two')
      expect(seen[0]).to.deep.equal({ completed: [], all: 2 })
      expect(seen[1].completed).to.deep.equal(afterFirst)
      expect(seen[1].all).to.equal(6)
      expect(agent.transcript.completedMessages()).to.have.length(8)
    })

    it('completedMessages() returns copies: editing them does not change the transcript', async () => {
      const agent = agentWith(new ScriptedModel([{ text: 'x' }]))
      await agent.run('go')
      const copy = agent.transcript.completedMessages()
      copy[0].content = 'edited'
      copy.pop()
      expect(agent.transcript.completedMessages()).to.deep.equal([
        { role: 'user', content: 'go' }, { role: 'assistant', content: 'x' },
      ])
    })

    it('every ended turn is balanced, whatever its stop reason', async () => {
      ctx.plugin(toolPlugin(makeTool('echo')))
      await ctx.lifecycle.flush()
      const call = { toolCalls: [{ name: 'echo', input: { text: '' } }] }
      const agent = agentWith(new ScriptedModel([
        call, { text: 'ok' }, // completed
        { ...call, finishReason: 'length' }, // max-tokens with calls
        { ...call, finishReason: 'refusal' }, // refusal with calls
        call, () => { throw new Error('boom') }, // error after a tool step
        call, call, // max-steps (maxSteps 2)
      ]), { maxSteps: 2 })
      const reasons: string[] = []
      for (let i = 0; i < 5; i++) {
        reasons.push((await agent.run(`turn ${i}`)).stopReason)
        expect(isBalanced(agent.transcript.completedMessages()), `after turn ${i}`).to.equal(true)
      }
      expect(reasons).to.deep.equal(['completed', 'max-tokens', 'refusal', 'error', 'max-steps'])
    })
  })

  describe('BUSY, INVALID_PROMPT, DISPOSED and dispose', () => {
    it('a second concurrent run rejects with BUSY and leaves the first alone', async () => {
      const release = deferred()
      const agent = agentWith(new ScriptedModel([async () => { await release.promise; return { text: 'first' } }, { text: 'second' }]))
      const first = agent.run('one')
      expect(agent.running).to.equal(true)
      const error = await rejection(agent.run('two'))
      expect(error).to.be.instanceOf(AgentError)
      expect(error.code).to.equal('BUSY')
      expect(error.message).to.include(agent.id)
      release.resolve()
      expect(await first).to.include({ stopReason: 'completed', text: 'first' })
      expect(agent.running).to.equal(false)
      expect(await agent.run('three')).to.include({ text: 'second' })
      expect(agent.transcript.messages.filter((message) => message.role === 'user').map((message) => message.content))
        .to.deep.equal(['one', 'three'])
    })

    it('a run started from inside the running turn (an onEvent listener) rejects with BUSY', async () => {
      const agent = agentWith(new ScriptedModel([{ text: 'outer' }, { text: 'inner' }]))
      let inner: Promise<RunResult> | undefined
      const outer = await agent.run('outer', {
        onEvent: (event) => { if (event.type === 'step-start') inner ??= agent.run('inner') },
      })
      expect(inner).to.not.equal(undefined)
      expect((await rejection(inner!)).code).to.equal('BUSY')
      expect(outer).to.include({ stopReason: 'completed', text: 'outer', steps: 1 })
      expect(agent.transcript.messages).to.deep.equal([
        { role: 'user', content: 'outer' }, { role: 'assistant', content: 'outer' },
      ])
    })

    it('a run started from inside the model call rejects with BUSY', async () => {
      let inner: Promise<RunResult> | undefined
      const agent: Agent = agentWith(new ScriptedModel([() => { inner = agent.run('inner'); return { text: 'outer' } }]))
      expect(await agent.run('outer')).to.include({ stopReason: 'completed', text: 'outer' })
      expect((await rejection(inner!)).code).to.equal('BUSY')
    })

    it('a prompt that is not a string rejects with INVALID_PROMPT and does not occupy the agent', async () => {
      const agent = agentWith(new ScriptedModel([{ text: 'ok' }]))
      for (const prompt of [undefined, 42, { text: 'x' }] as unknown[]) {
        expect((await rejection(agent.run(prompt as string))).code).to.equal('INVALID_PROMPT')
      }
      expect(agent.transcript.messages).to.deep.equal([])
      expect((await agent.run('fine')).stopReason).to.equal('completed')
    })

    it('run options of the wrong type reject with INVALID_OPTIONS', async () => {
      const agent = agentWith(new ScriptedModel([{ text: 'ok' }]))
      for (const options of [{ signal: {} }, { signal: 'abort' }, { onEvent: 'log' }, null]) {
        const error = await rejection(agent.run('go', options as never))
        expect(error.code, JSON.stringify(options)).to.equal('INVALID_OPTIONS')
      }
      expect(agent.running).to.equal(false)
      expect((await agent.run('go')).stopReason).to.equal('completed')
    })

    it('no event is reported after the run ended, even from a tool that settles late', async () => {
      const started = deferred()
      const release = deferred()
      let lateUpdateSent = false
      ctx.plugin(toolPlugin(makeTool('late', {
        execute: async (_, exec) => {
          exec.onUpdate?.({ kind: 'progress', text: 'early' })
          started.resolve()
          await release.promise
          exec.onUpdate?.({ kind: 'progress', text: 'late' })
          lateUpdateSent = true
          return { content: 'late result' }
        },
      })))
      await ctx.lifecycle.flush()
      const agent = agentWith(new ScriptedModel([{ toolCalls: [{ name: 'late', input: { text: '' } }] }]))
      const controller = new AbortController()
      const events: AgentEvent[] = []
      const running = agent.run('go', { signal: controller.signal, onEvent: (event) => events.push(event) })
      await started.promise
      controller.abort()
      await running
      const count = events.length
      expect(events.map((event) => event.type)).to.deep.equal(['step-start', 'step-end', 'tool-call', 'tool-update', 'tool-result'])
      release.resolve()
      await agent.dispose()
      expect(lateUpdateSent).to.equal(true)
      expect(events).to.have.length(count)
    })

    it('run after dispose rejects with DISPOSED', async () => {
      const model = new ScriptedModel([{ text: 'never' }])
      const agent = agentWith(model)
      await agent.dispose()
      expect(agent.disposed).to.equal(true)
      const error = await rejection(agent.run('go'))
      expect(error).to.be.instanceOf(AgentError)
      expect(error.code).to.equal('DISPOSED')
      expect(model.callCount).to.equal(0)
    })

    it('dispose is idempotent: every call returns the same promise', async () => {
      const agent = agentWith(new ScriptedModel([]))
      const first = agent.dispose()
      expect(agent.dispose()).to.equal(first)
      await first
      expect(agent.dispose()).to.equal(first)
    })

    it('dispose during a run aborts it and resolves only after the run and its tools have settled', async () => {
      const started = deferred()
      const release = deferred()
      let toolSettled = false
      ctx.plugin(toolPlugin(makeTool('stubborn', {
        execute: async () => {
          started.resolve()
          await release.promise // ignores the signal: it settles when it settles
          toolSettled = true
          return { content: 'finally' }
        },
      })))
      await ctx.lifecycle.flush()
      const agent = agentWith(new ScriptedModel([{ text: 'on it', toolCalls: [{ name: 'stubborn', input: { text: '' } }] }]))
      const running = agent.run('go')
      await started.promise
      const disposal = agent.dispose()
      let disposed = false
      void disposal.then(() => { disposed = true })
      const result = await running
      expect(result).to.include({ stopReason: 'aborted', text: 'on it' })
      expect(result.diagnostic).to.include('disposed')
      expect(isBalanced(agent.transcript.messages)).to.equal(true)
      await tick(5)
      expect(disposed, 'dispose must wait for the tool').to.equal(false)
      expect(agent.dispose()).to.equal(disposal)
      release.resolve()
      await disposal
      expect(toolSettled).to.equal(true)
      expect((await rejection(agent.run('again'))).code).to.equal('DISPOSED')
    })

    it('dispose waits for a model call that ignores its signal', async () => {
      const called = deferred()
      const late = deferred<GenerateResponse>()
      const agent = agentWith({ generate: () => { called.resolve(); return late.promise } })
      const running = agent.run('go')
      await called.promise
      const disposal = agent.dispose()
      let disposed = false
      void disposal.then(() => { disposed = true })
      expect((await running).stopReason).to.equal('aborted')
      await tick(5)
      expect(disposed).to.equal(false)
      late.resolve({ text: 'late', toolCalls: [], finishReason: 'stop' })
      await disposal
      expect(disposed).to.equal(true)
    })

    it('disposing an idle agent resolves at once', async () => {
      const agent = agentWith(new ScriptedModel([{ text: 'x' }]))
      await agent.run('go')
      await agent.dispose()
      expect(agent.disposed).to.equal(true)
      expect(agent.running).to.equal(false)
    })
  })
})
