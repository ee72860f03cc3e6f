import { getEventListeners, getMaxListeners } from 'node:events'
import { expect } from 'chai'
import { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import { makeTool, modelPlugin, setup, toolPlugin, type Setup } from './helpers.js'

/** The signal's listener limit; Node 20's getMaxListeners throws for a signal whose limit was set to 0 (unlimited). */
function maxListeners(signal: AbortSignal): number {
  try {
    return getMaxListeners(signal)
  } catch {
    return 0
  }
}

describe('a step with many parallel tool calls', () => {
  let s: Setup
  const warnings: Error[] = []
  const onWarning = (warning: Error) => { warnings.push(warning) }

  beforeEach(async () => {
    warnings.length = 0
    process.on('warning', onWarning)
    s = await setup()
  })

  afterEach(async () => {
    process.off('warning', onWarning)
    await s.ctx.stop()
  })

  it('a single tool that puts 20 listeners on the turn signal causes no MaxListenersExceededWarning', async () => {
    s.ctx.plugin(toolPlugin(makeTool('fan', {
      execute: async (_input, exec) => {
        const listeners = Array.from({ length: 20 }, () => () => {})
        for (const listener of listeners) exec.signal.addEventListener('abort', listener)
        await new Promise((resolve) => setImmediate(resolve))
        for (const listener of listeners) exec.signal.removeEventListener('abort', listener)
        return { content: 'fanned out' }
      },
    })))
    s.ctx.plugin(modelPlugin('m', new ScriptedModel([{ toolCalls: [{ name: 'fan', input: { text: 'x' } }] }, { text: 'done' }])))
    await s.ctx.lifecycle.flush()
    const agent = s.ctx.agents.create({ model: 'm' })
    const result = await agent.run('go')
    await new Promise((resolve) => setImmediate(resolve))
    expect(result.stopReason).to.equal('completed')
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).to.deep.equal([])
    await agent.dispose()
  })

  it('runs 50 calls at once without a MaxListenersExceededWarning on the turn signal', async () => {
    s.ctx.plugin(toolPlugin(makeTool('echo', { execute: async ({ text }) => ({ content: `echo ${text}` }) })))
    const calls = Array.from({ length: 50 }, (_, i) => ({ name: 'echo', input: { text: String(i) } }))
    s.ctx.plugin(modelPlugin('m', new ScriptedModel([{ toolCalls: calls }, { text: 'done' }])))
    await s.ctx.lifecycle.flush()
    const agent = s.ctx.agents.create({ model: 'm', maxToolCallsPerStep: 64 })
    const result = await agent.run('go', { signal: new AbortController().signal })
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve))
    expect(result.stopReason).to.equal('completed')
    expect(result.toolCalls).to.equal(50)
    expect(agent.transcript.messages.filter((m) => m.role === 'tool')).to.have.length(50)
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).to.deep.equal([])
    await agent.dispose()
  })
  it('the turn keeps no abort listener of its own on its signal, and lifts the listener limit only for a tool step', async () => {
    const seen: Array<{ listeners: number; max: number }> = []
    const look = (signal: AbortSignal) => seen.push({ listeners: getEventListeners(signal, 'abort').length, max: maxListeners(signal) })
    s.ctx.plugin(toolPlugin(makeTool('peek', {
      execute: async (_input, exec) => {
        look(exec.signal)
        return { content: 'peeked' }
      },
    })))
    let step = 0
    s.ctx.plugin(modelPlugin('m', {
      generate: async (request: GenerateRequest) => {
        look(request.signal)
        return ++step === 1
          ? { text: '', toolCalls: [{ id: 'p1', name: 'peek', input: { text: 'x' } }], finishReason: 'tool-calls' as const }
          : { text: 'done', toolCalls: [], finishReason: 'stop' as const }
      },
    }))
    await s.ctx.lifecycle.flush()
    const agent = s.ctx.agents.create({ model: 'm' })
    const result = await agent.run('go', { signal: new AbortController().signal })
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    // The model call before any tool: nothing listens, the default limit stands (no per-turn setMaxListeners).
    expect(seen[0]).to.deep.equal({ listeners: 0, max: 10 })
    // In the tool step the limit is lifted; the tool registry may listen, the turn itself does not.
    expect(seen[1].max).to.equal(0)
    expect(seen[2].max).to.equal(0)
    // A caller's abort still reaches a running turn (through the caller signal's one listener).
    const controller = new AbortController()
    s.ctx.agents.registerModel('slow', { generate: (request: GenerateRequest) => new Promise((_, reject) => {
      request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
      setImmediate(() => controller.abort('stop now'))
    }) })
    const slow = s.ctx.agents.create({ model: 'slow' })
    const aborted = await slow.run('go', { signal: controller.signal })
    expect(aborted.stopReason).to.equal('aborted')
    expect(aborted.diagnostic).to.equal('Aborted: stop now')
    await slow.dispose()
    await agent.dispose()
  })
})
