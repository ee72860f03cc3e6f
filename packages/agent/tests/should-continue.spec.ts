/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context, ForkScope } from 'cordis'
import { type ContinueState, ScriptedModel } from '@cordis-subagents/agent'
import { captureLogs } from '../../../test/support/logs.js'
import { isBalanced, makeTool, setup, toolPlugin } from './helpers.js'

/** A model that asks for one echo call every step, reporting 10 output tokens. */
function alwaysCalls(): ScriptedModel {
  return new ScriptedModel(() => ({ toolCalls: [{ name: 'echo', input: { text: 'x' } }], usage: { inputTokens: 0, outputTokens: 10 } }))
}

describe('ctx.agents.shouldContinue: an operator hook before every model call', () => {
  let ctx: Context
  let logs: ReturnType<typeof captureLogs>

  beforeEach(async () => {
    logs = captureLogs()
    ;({ ctx } = await setup())
    ctx.plugin(toolPlugin(makeTool('echo', { execute: async ({ text }) => ({ content: `echo ${text}` }) })))
    await ctx.lifecycle.flush()
  })

  afterEach(async () => {
    await ctx.stop()
    logs.restore()
  })

  function agentWith(model: ScriptedModel, options: Parameters<Context['agents']['create']>[0] = {}) {
    ctx.agents.registerModel('m', model)
    return ctx.agents.create({ model: 'm', ...options })
  }

  it('sees the agent, the step about to run, the spend and what is left; `{ stop }` ends the run as `budget` with the reason', async () => {
    const seen: Array<Omit<ContinueState, 'agent' | 'spent' | 'treeSpent'> & { agentId: string; steps: number; tokens: number; tree: number }> = []
    ctx.agents.shouldContinue((state) => {
      seen.push({
        agentId: state.agent.id, step: state.step, steps: state.spent.steps, tokens: state.spent.tokens,
        tree: state.treeSpent.tokens, remaining: state.remaining,
      })
      return state.spent.tokens >= 30 ? { stop: 'the nightly cost cap is reached' } : true
    })
    const model = alwaysCalls()
    const agent = agentWith(model, { budget: { maxSteps: 10 } })
    const result = await agent.run('go')

    expect(model.callCount).to.equal(3)
    expect(result.stopReason).to.equal('budget')
    expect(result.budget).to.equal(undefined) // no budget of the tree was passed: the policy stopped it
    expect(result.diagnostic).to.equal(
      'Stopped by the operator\'s policy (shouldContinue) before model call 4: the nightly cost cap is reached. The answer so far is partial.')
    expect(seen.map((s) => [s.agentId, s.step, s.steps, s.tokens, s.tree, s.remaining.maxSteps])).to.deep.equal([
      [agent.id, 1, 0, 0, 0, 10],
      [agent.id, 2, 1, 10, 10, 9],
      [agent.id, 3, 2, 20, 20, 8],
      [agent.id, 4, 3, 30, 30, 7],
    ])
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
  })

  it('`false` stops with a generic reason; `true` and `undefined` go on', async () => {
    let calls = 0
    ctx.agents.shouldContinue(() => undefined)
    ctx.agents.shouldContinue(() => (++calls < 3 ? true : false))
    const model = alwaysCalls()
    const result = await agentWith(model).run('go')
    expect(model.callCount).to.equal(2)
    expect(result.stopReason).to.equal('budget')
    expect(result.diagnostic).to.include('before model call 3: an operator\'s shouldContinue hook said stop')
  })

  it('is asked for children too: a hook can stop one agent of a tree by its id', async () => {
    const model = alwaysCalls()
    const parent = agentWith(model)
    const child = ctx.agents.create({ parent })
    ctx.agents.shouldContinue((state) => (state.agent === child ? { stop: 'children are paused' } : undefined))
    const childResult = await child.run('go')
    expect(childResult.stopReason).to.equal('budget')
    expect(childResult.diagnostic).to.include('before model call 1: children are paused')
    expect(model.callCount).to.equal(0)
  })

  it('is isolated: a throwing hook, or one returning a promise, is logged and counts as "go on"', async () => {
    ctx.agents.shouldContinue(() => { throw new Error('the quota service is down') })
    ctx.agents.shouldContinue((() => Promise.resolve(false)) as never)
    const model = new ScriptedModel([{ toolCalls: [{ name: 'echo', input: { text: 'x' } }] }, { text: 'done' }])
    const result = await agentWith(model).run('go')
    expect(result).to.include({ stopReason: 'completed', text: 'done' })
    const warnings = logs.records.filter((r) => r.name === 'agents' && r.type === 'warn').map((r) => r.content)
    expect(warnings.filter((w) => w.includes('the quota service is down'))).to.have.length(2) // once per model call
    expect(warnings.filter((w) => w.includes('returned a promise'))).to.have.length(2)
  })

  it('is removed with the plugin that added it', async () => {
    const fork: ForkScope = ctx.plugin({
      name: 'policy',
      inject: ['agents'],
      apply(ctx: Context) {
        ctx.agents.shouldContinue(() => false)
      },
    })
    await ctx.lifecycle.flush()
    const model = new ScriptedModel(() => ({ text: 'ok' }))
    const agent = agentWith(model)
    expect((await agent.run('one')).stopReason).to.equal('budget')
    fork.dispose()
    await ctx.lifecycle.flush()
    expect((await agent.run('two')).stopReason).to.equal('completed')
  })

  it('takes only a function', async () => {
    expect(() => ctx.agents.shouldContinue('stop' as never)).to.throw(/shouldContinue\(\) takes a function/)
  })
})
