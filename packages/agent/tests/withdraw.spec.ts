/// <reference types="mocha" />
// `agent.withdraw(questionId)`: a parked turn goes on past a question nobody can answer any more.
// The calls suspended on it get their tool's `withdrawn` result (never an answer), the transcript
// stays balanced, calls on other questions keep waiting, and a late answer to it is NOT_PARKED.
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import type { Tool, ToolSuspension } from '@cordis-subagents/tools'
import { type Agent, AgentError, type AgentEvent, type ChatModel, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import { isBalanced, setup, toolPlugin } from './helpers.js'

/** Asks `q` (question id `q-<q>`); records each resume and each withdrawal. */
function askTool(log: string[], withdrawable = true): Tool<any> {
  const tool: Tool<any> = {
    name: 'ask',
    description: 'asks a question',
    input: z.object({ q: z.string() }),
    execute: ({ q }: { q: string }) => ({ content: '', suspend: { question: { id: `q-${q}`, kind: 'ask', text: q, path: [] }, state: { q } } }),
    resume: (answer: string, suspension: ToolSuspension) => {
      log.push(`${(suspension.state as { q: string }).q}=${answer}`)
      return { content: `answered ${answer}` }
    },
  }
  if (withdrawable) {
    tool.withdrawn = (suspension: ToolSuspension) => {
      log.push(`${(suspension.state as { q: string }).q} withdrawn`)
      return { content: 'nobody answered: the asker ended', isError: true }
    }
  }
  return tool
}

const code = (promise: Promise<unknown>) => promise.then(() => 'resolved', (error: AgentError) => error.code)
const toolTexts = (request: GenerateRequest) => request.messages.filter((message) => message.role === 'tool').map((message) => String(message.content))

describe('agent.withdraw: a parked turn goes on past a question nobody can answer', () => {
  let ctx: Context
  let log: string[]

  beforeEach(async () => {
    ({ ctx } = await setup())
    log = []
  })
  afterEach(async () => { await ctx.stop() })

  async function agentWith(model: ChatModel, withdrawable = true): Promise<Agent> {
    ctx.plugin(toolPlugin(askTool(log, withdrawable)))
    await ctx.lifecycle.flush()
    ctx.agents.registerModel('m', model)
    return ctx.agents.create({ model: 'm' })
  }

  const ask = (q: string) => ({ name: 'ask', input: { q } })

  it('the calls on the withdrawn question get the tool\'s withdrawn result; the others keep waiting; a late answer is NOT_PARKED', async () => {
    const model = new ScriptedModel([{ toolCalls: [ask('a'), ask('b'), ask('b')] }, { text: 'done' }])
    const agent = await agentWith(model)
    await agent.run('go')
    const events: AgentEvent[] = []
    const next = await agent.withdraw('q-b', { onEvent: (event) => events.push(event) })
    expect(next.stopReason).to.equal('pending')
    expect(agent.waitingOn.map((question) => question.id)).to.deep.equal(['q-a'])
    expect(events[0]).to.deep.equal({ type: 'resumed', step: 1, questionId: 'q-b', withdrawn: true })
    // Never an answer: the tool's `withdrawn` ran, its `resume` did not.
    expect(log).to.deep.equal(['b withdrawn', 'b withdrawn'])
    const late = await agent.resume('x', { questionId: 'q-b' }).then(() => undefined, (error: AgentError) => error)
    expect(late).to.be.instanceOf(AgentError).with.property('code', 'NOT_PARKED')
    expect(late!.message).to.match(/it was withdrawn/)
    expect((await agent.resume('one')).stopReason).to.equal('completed')
    expect(log).to.deep.equal(['b withdrawn', 'b withdrawn', 'a=one'])
    // In the order the calls got their results.
    expect(toolTexts(model.requests[1])).to.deep.equal(['nobody answered: the asker ended', 'nobody answered: the asker ended', 'answered one'])
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
  })

  it('the last question withdrawn: the turn goes on to its end, and whoever holds the agent reads it with nextResult()', async () => {
    const agent = await agentWith(new ScriptedModel([{ toolCalls: [ask('a')] }, { text: 'went on' }]))
    await agent.run('go')
    const held = agent.nextResult()
    const done = await agent.withdraw('q-a')
    expect(done).to.include({ stopReason: 'completed', text: 'went on' })
    expect(await held).to.equal(done)
    expect(agent.parked).to.equal(undefined)
    const late = await agent.resume('x').then(() => undefined, (error: AgentError) => error)
    expect(late).to.have.property('code', 'NOT_PARKED')
    expect(late!.message).to.match(/question q-a \("a"\) was withdrawn/)
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
  })

  it('a tool without withdrawn: its call gets an error result that says so; the transcript stays balanced', async () => {
    const model = new ScriptedModel([{ toolCalls: [ask('a')] }, { text: 'ok' }])
    const agent = await agentWith(model, false)
    await agent.run('go')
    expect((await agent.withdraw('q-a')).stopReason).to.equal('completed')
    expect(log).to.deep.equal([])
    expect(toolTexts(model.requests[1])[0]).to.match(/^Tool "ask" got no answer: its question "a" was withdrawn/)
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
  })

  it('a withdrawn question quoted in the result is cut on a character boundary, with a mark', async () => {
    const long = `${'a'.repeat(199)}😀 and more`
    const model = new ScriptedModel([{ toolCalls: [ask(long)] }, { text: 'ok' }])
    const agent = await agentWith(model, false)
    await agent.run('go')
    await agent.withdraw(`q-${long}`)
    const quoted = toolTexts(model.requests[1])[0]
    expect(quoted).to.include(`its question "${'a'.repeat(199)}…" was withdrawn`)
    expect(quoted).to.not.include('\\ud83d')
  })

  it('refusals: not parked, an unknown or non-string question, a busy agent, a disposed one', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => { release = resolve })
    const agent = await agentWith(new ScriptedModel([
      { toolCalls: [ask('a')] },
      () => gate.then(() => ({ text: 'done' })),
    ]))
    expect(await code(agent.withdraw('q-a'))).to.equal('NOT_PARKED')
    await agent.run('go')
    expect(await code(agent.withdraw('q-nope'))).to.equal('NOT_PARKED')
    expect(await code(agent.withdraw(7 as never))).to.equal('INVALID_OPTIONS')
    const going = agent.withdraw('q-a')
    expect(await code(agent.withdraw('q-a'))).to.equal('BUSY')
    release()
    expect((await going).stopReason).to.equal('completed')
    await agent.dispose()
    expect(await code(agent.withdraw('q-a'))).to.equal('DISPOSED')
  })
})
