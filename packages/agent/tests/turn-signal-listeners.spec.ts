import { expect } from 'chai'
import { ScriptedModel } from '@cordis-subagents/agent'
import { makeTool, modelPlugin, setup, toolPlugin, type Setup } from './helpers.js'

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
})
