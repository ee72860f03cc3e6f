/// <reference types="mocha" />
// One question, one answer at the agent: calls of a step suspended on the same question share one
// answer; `resume` can name the question it answers; a second answer is ALREADY_ANSWERED; and
// whoever holds the agent reads a turn somebody else continued with `nextResult()`.
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import type { Tool, ToolSuspension } from '@cordis-subagents/tools'
import { type Agent, AgentError, type ChatModel, ScriptedModel } from '@cordis-subagents/agent'
import { isBalanced, setup, toolPlugin } from './helpers.js'

/** Asks `q` (the question id is `q-<q>`, so two calls asking the same `q` share one question); records each resume. */
function askTool(resumed: string[]): Tool<any> {
  return {
    name: 'ask',
    description: 'asks a question',
    input: z.object({ q: z.string() }),
    execute: ({ q }: { q: string }) => ({ content: '', suspend: { question: { id: `q-${q}`, kind: 'ask', text: q, path: [] }, state: { q } } }),
    resume: (answer: string, suspension: ToolSuspension) => {
      const { q } = suspension.state as { q: string }
      resumed.push(`${q}=${answer}`)
      return { content: `${q} → ${answer}` }
    },
  }
}

const code = (promise: Promise<unknown>) => promise.then(() => 'resolved', (error: AgentError) => error.code)

describe('one question, one answer: an agent parked on suspended calls', () => {
  let ctx: Context
  let resumed: string[]

  beforeEach(async () => {
    ({ ctx } = await setup())
    resumed = []
  })
  afterEach(async () => { await ctx.stop() })

  async function agentWith(model: ChatModel): Promise<Agent> {
    ctx.plugin(toolPlugin(askTool(resumed)))
    await ctx.lifecycle.flush()
    ctx.agents.registerModel('m', model)
    return ctx.agents.create({ model: 'm' })
  }

  const ask = (q: string) => ({ name: 'ask', input: { q } })

  it('two calls suspended on the same question: asked once, one answer reaches both; a second answer is ALREADY_ANSWERED', async () => {
    const agent = await agentWith(new ScriptedModel([{ toolCalls: [ask('region'), ask('region')] }, { text: 'done' }]))
    const first = await agent.run('go')
    expect(first.stopReason).to.equal('pending')
    expect(agent.waitingOn.map((question) => question.id)).to.deep.equal(['q-region'])
    const done = await agent.resume('eu')
    expect(done.stopReason).to.equal('completed')
    expect(resumed).to.deep.equal(['region=eu', 'region=eu'])
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
    const again = await agent.resume('us').then(() => undefined, (error: AgentError) => error)
    expect(again).to.be.instanceOf(AgentError).with.property('code', 'ALREADY_ANSWERED')
    expect(again!.message).to.match(/question q-region \("region"\) was answered already/)
    // A new turn starts afresh: nothing is parked, and nothing was answered in it.
    await agent.run('again')
    expect(await code(agent.resume('x'))).to.equal('NOT_PARKED')
  })

  it('resume(answer, { questionId }) answers that question wherever it is in the step; the turn parks again on the rest', async () => {
    const agent = await agentWith(new ScriptedModel([{ toolCalls: [ask('a'), ask('b'), ask('b')] }, { text: 'done' }]))
    await agent.run('go')
    expect(agent.parked).to.include({ id: 'q-a' })
    expect(agent.waitingOn.map((question) => question.id)).to.deep.equal(['q-a', 'q-b'])
    expect(await code(agent.resume('x', { questionId: 'q-nope' }))).to.equal('NOT_PARKED')
    expect(await code(agent.resume('x', { questionId: 42 as never }))).to.equal('INVALID_OPTIONS')
    const next = await agent.resume('two', { questionId: 'q-b' })
    expect(next.stopReason).to.equal('pending')
    expect(next.question).to.include({ id: 'q-a' })
    expect(agent.waitingOn.map((question) => question.id)).to.deep.equal(['q-a'])
    expect(resumed).to.deep.equal(['b=two', 'b=two'])
    expect(await code(agent.resume('x', { questionId: 'q-b' }))).to.equal('ALREADY_ANSWERED')
    expect((await agent.resume('one')).stopReason).to.equal('completed')
    expect(resumed).to.deep.equal(['b=two', 'b=two', 'a=one'])
  })

  it('nextResult(): one promise per leg for every caller, the result of a turn someone else continued; DISPOSED at dispose', async () => {
    const agent = await agentWith(new ScriptedModel([{ toolCalls: [ask('a')] }, { text: 'done' }]))
    await agent.run('go')
    const watched = agent.nextResult()
    expect(agent.nextResult()).to.equal(watched)
    const resumedHere = agent.resume('yes')
    expect(await watched).to.equal(await resumedHere)
    expect((await watched).stopReason).to.equal('completed')
    const idle = agent.nextResult()
    await agent.dispose()
    expect(await code(idle)).to.equal('DISPOSED')
    expect(await code(agent.nextResult())).to.equal('DISPOSED')
  })
})
