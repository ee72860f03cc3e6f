/// <reference types="mocha" />
import { expect } from 'chai'
import fc from 'fast-check'
import type { Context } from 'cordis'
import { type FinishReason, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import { isBalanced, makeTool, setup, toolPlugin } from './helpers.js'

describe('balanced transcripts when a model reuses tool-call ids across steps', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
    ctx.plugin(toolPlugin(
      makeTool('echo', { execute: async ({ text }) => ({ content: `echo ${text}` }) }),
      makeTool('boom', { execute: async () => { throw new Error('tool failed') } }),
    ))
    await ctx.lifecycle.flush()
  })

  afterEach(async () => {
    await ctx.stop()
  })

  it('a step ending with `length` plus a call whose id an earlier step used gets its own synthetic result', async () => {
    ctx.agents.registerModel('m', new ScriptedModel([
      { toolCalls: [{ id: 'call_0', name: 'echo', input: { text: 'first' } }] },
      { toolCalls: [{ id: 'call_0', name: 'echo', input: { text: 'second' } }], finishReason: 'length' },
    ]))
    const agent = ctx.agents.create({ model: 'm' })
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('max-tokens')
    const completed = agent.transcript.completedMessages()
    expect(completed.filter((m) => m.role === 'tool')).to.have.length(2)
    expect(isBalanced(completed)).to.equal(true)
    // A fork of it is a valid seed for the next turn.
    ctx.agents.registerModel('n', new ScriptedModel([{ text: 'ok' }]))
    const fork = ctx.agents.create({ model: 'n', seed: completed })
    await fork.run('next')
    expect(isBalanced(fork.transcript.completedMessages())).to.equal(true)
  })

  it('property: any script of reused ids, finish reasons, failing tools and aborts leaves every ended turn balanced', async () => {
    const callArb = fc.record({
      id: fc.constantFrom('call_0', 'call_1', undefined),
      name: fc.constantFrom('echo', 'boom', 'missing'),
    })
    const stepArb = fc.record({
      calls: fc.array(callArb, { maxLength: 3 }),
      finishReason: fc.constantFrom<FinishReason | undefined>(undefined, undefined, 'length', 'error', 'stop'),
    })
    const turnArb = fc.record({ steps: fc.array(stepArb, { minLength: 1, maxLength: 6 }), abortAt: fc.option(fc.nat(6)) })
    let turnsChecked = 0
    await fc.assert(fc.asyncProperty(fc.array(turnArb, { minLength: 1, maxLength: 3 }), async (turns) => {
      let index = 0
      const replies: ScriptedResponse[] = turns.flatMap((turn) => [
        ...turn.steps.map((step) => ({
          toolCalls: step.calls.map((call, i) => ({ ...call.id ? { id: call.id } : {}, name: call.name, input: { text: String(i) } })),
          ...step.finishReason ? { finishReason: step.finishReason } : {},
        })),
        { text: 'done' },
      ])
      const model = new ScriptedModel(() => replies[index++] ?? { text: 'done' })
      const name = `m${turnsChecked}`
      ctx.agents.registerModel(name, model)
      const agent = ctx.agents.create({ model: name, maxSteps: 8 })
      for (const turn of turns) {
        const controller = new AbortController()
        let steps = 0
        const running = agent.run('go', {
          signal: controller.signal,
          onEvent: (event) => {
            if (event.type === 'step-start' && turn.abortAt !== null && ++steps > turn.abortAt) controller.abort('stop')
          },
        })
        await running
        turnsChecked++
        expect(isBalanced(agent.transcript.completedMessages())).to.equal(true)
      }
      await agent.dispose()
    }), { numRuns: 150 })
    expect(turnsChecked).to.be.greaterThan(150)
  })
})
