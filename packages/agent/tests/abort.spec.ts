import { expect } from 'chai'
import { ScriptedModel } from '@cordis-subagents/agent'
import { deferred, isBalanced, makeTool, modelPlugin, setup, toolPlugin, type Setup } from './helpers.js'

describe('agent.abort()', () => {
  let s: Setup

  beforeEach(async () => { s = await setup() })
  afterEach(async () => { await s.ctx.stop() })

  it('ends the running turn as aborted with the reason, keeping the transcript balanced', async () => {
    const started = deferred()
    s.ctx.plugin(toolPlugin(makeTool('wait', {
      execute: (_input, exec) => new Promise((resolve) => {
        started.resolve()
        exec.signal.addEventListener('abort', () => resolve({ content: 'stopped' }), { once: true })
      }),
    })))
    s.ctx.plugin(modelPlugin('m', new ScriptedModel([{ text: 'working', toolCalls: [{ name: 'wait', input: { text: 'x' } }] }])))
    await s.ctx.lifecycle.flush()
    const agent = s.ctx.agents.create({ model: 'm' })
    const running = agent.run('go')
    await started.promise
    agent.abort(new Error('the user changed their mind'))
    const result = await running
    expect(result.stopReason).to.equal('aborted')
    expect(result.diagnostic).to.contain('the user changed their mind')
    expect(result.text).to.equal('working')
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
    await agent.dispose()
  })

  it('is a no-op on an idle agent: the next run is unaffected', async () => {
    s.ctx.plugin(modelPlugin('m', new ScriptedModel([{ text: 'fine' }])))
    await s.ctx.lifecycle.flush()
    const agent = s.ctx.agents.create({ model: 'm' })
    agent.abort(new Error('nothing to abort'))
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('fine')
    await agent.dispose()
  })
})
