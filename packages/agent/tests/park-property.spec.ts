/// <reference types="mocha" />
import { expect } from 'chai'
import fc from 'fast-check'
import type { Context } from 'cordis'
import { z } from 'zod'
import type { Tool } from '@cordis-subagents/tools'
import { type Agent, type RunResult, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import { isBalanced, setup, tick, toolPlugin } from './helpers.js'

const input = z.object({ text: z.string() })
const tools: Tool<any>[] = [
  { name: 'echo', description: 'echoes', input, execute: ({ text }: { text: string }) => ({ content: `echo ${text}` }) },
  { name: 'boom', description: 'throws', input, execute: () => { throw new Error('boom') } },
  {
    name: 'ask', description: 'asks', input,
    execute: ({ text }: { text: string }) => ({ content: '', suspend: { question: { id: `q-${text}`, kind: 'ask', text, path: [] }, state: { text } } }),
    // Asks once more when the answer is "again".
    resume: (answer: string, suspension) => (answer === 'again'
      ? { content: '', suspend: { question: { ...suspension.question, id: `${suspension.question.id}+` }, state: suspension.state } }
      : { content: `answered ${answer}` }),
  },
]

type Action = 'answer' | 'again' | 'abort' | 'restore' | 'dispose'

describe('park and resume, property: any script of suspending, failing and plain calls, any answers', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
    ctx.plugin(toolPlugin(...tools))
    await ctx.lifecycle.flush()
  })

  afterEach(async () => {
    await ctx.stop()
  })

  it('parks only on valid questions, never calls the model while parked, grows its tallies, and leaves every ended turn balanced', async () => {
    const stepArb = fc.array(fc.constantFrom('echo', 'boom', 'ask', 'missing'), { maxLength: 3 })
    const scriptArb = fc.record({
      steps: fc.array(stepArb, { minLength: 1, maxLength: 5 }),
      actions: fc.array(fc.constantFrom<Action>('answer', 'answer', 'again', 'abort', 'restore', 'dispose'), { minLength: 1, maxLength: 12 }),
    })
    let parks = 0
    let runs = 0
    await fc.assert(fc.asyncProperty(scriptArb, async ({ steps, actions }) => {
      let index = 0
      const replies: ScriptedResponse[] = steps.map((names) => ({ toolCalls: names.map((name, i) => ({ name, input: { text: `${index}-${i}` } })) }))
      const model = new ScriptedModel(() => replies[index++] ?? { text: 'done' }, { usage: { inputTokens: 1, outputTokens: 1 } })
      const name = `m${runs++}`
      ctx.agents.registerModel(name, model)
      let agent: Agent = ctx.agents.create({ model: name, maxSteps: 8 })
      let result: RunResult = await agent.run('go')
      for (const action of actions) {
        if (result.stopReason !== 'pending') break
        parks++
        expect(agent.parked).to.deep.equal(result.question)
        expect(result.question?.kind).to.equal('ask')
        const calls = model.callCount
        await tick(1)
        expect(model.callCount, 'no model call while parked').to.equal(calls)
        if (action === 'dispose') {
          await agent.dispose()
          expect(isBalanced(agent.transcript.messages)).to.equal(true)
          return
        }
        if (action === 'restore') {
          const checkpoint = JSON.parse(JSON.stringify(agent.checkpoint()))
          await agent.dispose()
          agent = ctx.agents.create({ restore: checkpoint })
          expect(agent.checkpoint()).to.deep.equal(checkpoint)
          continue
        }
        const controller = new AbortController()
        if (action === 'abort') controller.abort('stop')
        const next = await agent.resume(action === 'again' ? 'again' : 'yes', { signal: controller.signal })
        expect(model.callCount - calls).to.equal(next.steps - result.steps)
        expect(next.steps).to.be.at.least(result.steps)
        expect(next.toolCalls).to.be.at.least(result.toolCalls)
        expect(next.usage.inputTokens).to.be.at.least(result.usage.inputTokens)
        if (action === 'abort') expect(next.stopReason).to.equal('aborted')
        result = next
      }
      if (result.stopReason !== 'pending') {
        expect(agent.parked).to.equal(undefined)
        expect(isBalanced(agent.transcript.messages)).to.equal(true)
      }
      await agent.dispose()
      expect(isBalanced(agent.transcript.messages)).to.equal(true)
    }), { numRuns: 120 })
    expect(parks).to.be.greaterThan(50)
  })
})
