/// <reference types="mocha" />
// ctx.agents.observe: runs, model calls and tool calls as they start and end, in order, isolated
// from the loop, scoped to the observing plugin; with no observer, nothing is called at all.
import { expect } from 'chai'
import type { Context } from 'cordis'
import { type AgentObserver, type RunResult, ScriptedModel } from '@cordis-subagents/agent'
import { unhandledRejectionsDuring } from '@cordis-subagents/test-support'
import { AgentError } from '@cordis-subagents/agent'
import { makeTool, modelPlugin, setup, toolPlugin } from './helpers.js'

/** An observer that writes every call as a line. */
function recorder(lines: string[]): Required<AgentObserver> {
  return {
    runStart: (agent, prompt) => lines.push(`run-start ${agent.label} ${prompt}`),
    runEnd: (agent, result) => lines.push(`run-end ${agent.label} ${result.stopReason}`),
    modelCallStart: (_agent, step, model) => lines.push(`model-start ${step} ${model}`),
    modelCallEnd: (_agent, step, response, error, aborted) => lines.push(response
      ? `model-end ${step} ${response.finishReason} ${response.usage?.inputTokens ?? '-'}`
      : `model-error ${step} ${(error as Error).message} aborted=${aborted}`),
    toolCallStart: (_agent, step, call) => lines.push(`tool-start ${step} ${call.id} ${call.name}`),
    toolCallEnd: (_agent, step, call, result) => lines.push(`tool-end ${step} ${call.id} ${result.isError ? 'error' : result.content}`),
  }
}

describe('ctx.agents.observe', () => {
  let ctx: Context
  const contexts: Context[] = []

  async function start(script: ConstructorParameters<typeof ScriptedModel>[0], config = {}) {
    ;({ ctx } = await setup({ model: 'm', ...config }))
    contexts.push(ctx)
    ctx.plugin(modelPlugin('m', new ScriptedModel(script, { usage: { inputTokens: 3, outputTokens: 1 } })))
    ctx.plugin(toolPlugin(makeTool('echo'), makeTool('boom', { execute: () => { throw new Error('no') } })))
    await ctx.lifecycle.flush()
  }

  afterEach(async () => {
    for (const c of contexts.splice(0)) await c.stop()
  })

  it('reports a run, its model calls and its tool calls in order (failing and malformed calls too)', async () => {
    await start([
      { toolCalls: [{ id: 'a', name: 'echo', input: { text: 'hi' } }, { id: 'b', name: 'boom', input: { text: 'x' } }, { id: 'c', name: 'echo', input: {}, invalidInput: 'bad JSON' }] },
      { text: 'done' },
    ])
    const lines: string[] = []
    ctx.agents.observe(recorder(lines))
    const agent = ctx.agents.create({ label: 'main' })
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('completed')
    // Tool calls of a step run concurrently: their ends may come in any order.
    expect(lines.slice(0, 3)).to.deep.equal(['run-start main go', 'model-start 1 m', 'model-end 1 tool-calls 3'])
    expect(lines.slice(3, 6)).to.deep.equal(['tool-start 1 a echo', 'tool-start 1 b boom', 'tool-start 1 c echo'])
    expect(lines.slice(6, 9).sort()).to.deep.equal(['tool-end 1 a echo:hi', 'tool-end 1 b error', 'tool-end 1 c error'])
    expect(lines.slice(9)).to.deep.equal(['model-start 2 m', 'model-end 2 stop 3', 'run-end main completed'])
  })

  it('a model that throws, and an aborted model call, end with the error (and whether the turn was aborted)', async () => {
    await start((request) => {
      if (request.messages.at(-1)?.content === 'hang') return new Promise(() => {})
      throw new Error('model down')
    })
    const lines: string[] = []
    ctx.agents.observe(recorder(lines))
    const agent = ctx.agents.create({ label: 'x' })
    expect((await agent.run('fail')).stopReason).to.equal('error')
    const controller = new AbortController()
    const running = agent.run('hang', { signal: controller.signal })
    setImmediate(() => controller.abort(new Error('stop it')))
    expect((await running).stopReason).to.equal('aborted')
    expect(lines).to.deep.equal([
      'run-start x fail', 'model-start 1 m', 'model-error 1 model down aborted=false', 'run-end x error',
      'run-start x hang', 'model-start 1 m', 'model-error 1 stop it aborted=true', 'run-end x aborted',
    ])
  })

  it('a throwing observer never breaks the loop, and the other observers still hear everything', async () => {
    await start([{ toolCalls: [{ id: 'a', name: 'echo', input: { text: 'hi' } }] }, { text: 'done' }])
    const thrower: AgentObserver = Object.fromEntries(Object.keys(recorder([])).map((key) => [key, () => { throw new Error('observer bug') }]))
    ctx.agents.observe(thrower)
    const lines: string[] = []
    ctx.agents.observe(recorder(lines))
    const result = await ctx.agents.create({ label: 'main' }).run('go')
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('done')
    expect(lines).to.have.length(8)
  })

  it('an async observer, onEvent, onSpend and metric sink that reject stop nothing and leave no unhandled rejection', async () => {
    await start([{ toolCalls: [{ id: 'a', name: 'echo', input: { text: 'hi' } }] }, { text: 'done' }])
    const rejecting: AgentObserver = Object.fromEntries(Object.keys(recorder([])).map((key) => [key, async () => {
      throw new Error(`observer ${key} rejected`)
    }]))
    ctx.agents.observe(rejecting)
    const lines: string[] = []
    ctx.agents.observe(recorder(lines))
    let result: RunResult | undefined
    const rejected = async () => { throw new Error('a callback rejected') }
    const left = await unhandledRejectionsDuring(async () => {
      const agent = ctx.agents.create({ label: 'main', metrics: rejected })
      result = await agent.run('go', { onEvent: rejected, onSpend: rejected })
      await agent.dispose()
    })
    expect(result?.stopReason).to.equal('completed')
    expect(lines).to.have.length(8)
    expect(left.map((reason) => (reason as Error).message)).to.deep.equal([])
  })

  it('an observer that declines a run (runStart returns false) hears nothing more of it; the others hear all of it', async () => {
    await start(() => ({ text: 'ok' }))
    const first: string[] = []
    const declining: string[] = []
    const last: string[] = []
    ctx.agents.observe(recorder(first))
    ctx.agents.observe({
      ...recorder(declining),
      runStart: (agent, prompt) => {
        declining.push(`run-start ${agent.label} ${prompt}`)
        return prompt !== 'quiet'
      },
    })
    ctx.agents.observe(recorder(last))
    const agent = ctx.agents.create({ label: 'main' })
    await agent.run('quiet')
    await agent.run('loud')
    const run = (prompt: string) => [`run-start main ${prompt}`, 'model-start 1 m', 'model-end 1 stop 3', 'run-end main completed']
    expect(first).to.deep.equal([...run('quiet'), ...run('loud')])
    expect(last).to.deep.equal([...run('quiet'), ...run('loud')])
    expect(declining).to.deep.equal(['run-start main quiet', ...run('loud')])
  })

  it('a run every observer declines is not watched at all', async () => {
    await start(() => ({ text: 'ok' }))
    const lines: string[] = []
    ctx.agents.observe({ ...recorder(lines), runStart: (agent, prompt) => { lines.push(`run-start ${agent.label} ${prompt}`); return false } })
    const result = await ctx.agents.create({ label: 'main' }).run('go')
    expect(result.stopReason).to.equal('completed')
    expect(lines).to.deep.equal(['run-start main go'])
  })

  it('is scoped to the observing plugin; an observer added mid-run sees the next run', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => { release = resolve })
    await start(async (request) => {
      if (request.messages.at(-1)?.content === 'slow') await gate
      return { text: 'ok' }
    })
    const lines: string[] = []
    const agent = ctx.agents.create({ label: 'main' })
    const slow = agent.run('slow')
    const fork = ctx.plugin({ name: 'observer', inject: ['agents'], apply: (c: Context) => { c.agents.observe(recorder(lines)) } })
    await ctx.lifecycle.flush()
    release()
    await slow
    expect(lines).to.deep.equal([])
    await agent.run('next')
    expect(lines).to.deep.equal(['run-start main next', 'model-start 1 m', 'model-end 1 stop 3', 'run-end main completed'])
    fork.dispose()
    await agent.run('after')
    expect(lines).to.have.length(4)
  })

  it('takes an object', async () => {
    await start([])
    expect(() => ctx.agents.observe(undefined as never)).to.throw(AgentError)
  })
})
