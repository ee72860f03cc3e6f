/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import { MAX_QUESTION_LENGTH, MAX_QUESTION_PATH, type PendingQuestion } from '@cordis-subagents/shared'
import type { Tool, ToolSuspension } from '@cordis-subagents/tools'
import { type Agent, AgentError, type AgentEvent, type AgentObserver, type ChatModel, type RunResult, ScriptedModel } from '@cordis-subagents/agent'
import { deferred, echo, isBalanced, setup, tick, toolPlugin } from './helpers.js'

const usage = { inputTokens: 10, outputTokens: 2 }

function question(id: string, text: string, path: string[] = []): PendingQuestion {
  return { id, kind: 'ask', text, path }
}

/** A tool that asks `q` and answers its call with what it was told. */
function askTool(overrides: Partial<Tool<any>> = {}): Tool<any> {
  return {
    name: 'ask',
    description: 'asks a question',
    input: z.object({ q: z.string() }),
    execute: ({ q }: { q: string }) => ({ content: '', suspend: { question: question(`q-${q}`, q), state: { q } } }),
    resume: (answer: string, suspension: ToolSuspension) => ({ content: `${(suspension.state as { q: string }).q} → ${answer}` }),
    ...overrides,
  }
}

describe('park and resume: a tool that suspends parks the turn, resume continues it', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  async function agentWith(model: ChatModel, ...tools: Tool<any>[]): Promise<Agent> {
    ctx.plugin(toolPlugin(...tools))
    await ctx.lifecycle.flush()
    ctx.agents.registerModel('m', model)
    return ctx.agents.create({ model: 'm' })
  }

  it('parks with the question, answers the other calls in order, makes no model call while parked, and resumes with tallies that grow', async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'echo', input: { text: 'a' } }, { name: 'ask', input: { q: 'colour?' } }, { name: 'echo', input: { text: 'b' } }] },
      { text: 'done: blue' },
    ], { usage })
    const agent = await agentWith(model, askTool(), echo)
    const first = await agent.run('go')
    expect(first.stopReason).to.equal('pending')
    expect(first.question).to.deep.equal(question('q-colour?', 'colour?'))
    expect(first).to.include({ steps: 1, toolCalls: 3 })
    expect(first.usage).to.deep.include({ inputTokens: 10, outputTokens: 2 })
    expect(agent.parked).to.deep.equal(first.question)
    expect(agent.running).to.equal(false)
    // The suspended call stays unanswered; the others' results are in, in call order.
    expect(agent.transcript.messages.slice(-3).map((message) => message.role === 'tool' ? message.content : message.role)).to.deep.equal(['assistant', 'echo a', 'echo b'])
    // The parked turn is in flight: completed() does not include it.
    expect(agent.transcript.completed()).to.have.length(0)
    await tick(5)
    expect(model.callCount).to.equal(1)

    const second = await agent.resume('blue')
    expect(second).to.include({ stopReason: 'completed', text: 'done: blue', steps: 2, toolCalls: 3 })
    expect(second.question).to.equal(undefined)
    expect(second.usage).to.deep.include({ inputTokens: 20, outputTokens: 4 })
    expect(second.work.own).to.deep.equal({ steps: 2, toolCalls: 3, delegations: 0 })
    expect(agent.usage.total).to.deep.include({ inputTokens: 20, outputTokens: 4 })
    expect(agent.work.own).to.deep.equal({ steps: 2, toolCalls: 3, delegations: 0 })
    expect(model.requests[1].messages.at(-1)).to.deep.equal({ role: 'tool', toolCallId: 'call_0_1', name: 'ask', content: 'colour? → blue' })
    expect(agent.parked).to.equal(undefined)
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
    expect(agent.transcript.completed()).to.have.length(6)
  })

  it('two suspensions in one step: each resume answers one call, the next question is asked without a model call', async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'ask', input: { q: 'one' } }, { name: 'ask', input: { q: 'two' } }] },
      { text: 'both answered' },
    ])
    const agent = await agentWith(model, askTool())
    expect((await agent.run('go')).question?.text).to.equal('one')
    const second = await agent.resume('1')
    expect(second.stopReason).to.equal('pending')
    expect(second.question?.text).to.equal('two')
    expect(model.callCount).to.equal(1)
    const third = await agent.resume('2')
    expect(third).to.include({ stopReason: 'completed', text: 'both answered', steps: 2, toolCalls: 2 })
    expect(model.requests[1].messages.slice(-2).map((message) => message.content)).to.deep.equal(['one → 1', 'two → 2'])
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
  })

  it('a resumed tool that suspends again parks the turn again on its new question', async () => {
    let asked = 0
    const tool = askTool({
      resume: (answer: string) => (++asked < 2
        ? { content: '', suspend: { question: question('q-again', `again after ${answer}`) } }
        : { content: `finally ${answer}` }),
    })
    const model = new ScriptedModel([{ toolCalls: [{ name: 'ask', input: { q: 'first' } }] }, { text: 'ok' }])
    const agent = await agentWith(model, tool)
    await agent.run('go')
    const again = await agent.resume('x')
    expect(again.stopReason).to.equal('pending')
    expect(again.question).to.deep.equal(question('q-again', 'again after x'))
    const done = await agent.resume('y')
    expect(done.stopReason).to.equal('completed')
    expect(model.requests[1].messages.at(-1)?.content).to.equal('finally y')
  })

  it('a tool that suspends without a resume method gets an error result and never parks', async () => {
    const model = new ScriptedModel([{ toolCalls: [{ name: 'ask', input: { q: 'x' } }] }, { text: 'gave up' }])
    const agent = await agentWith(model, askTool({ resume: undefined }))
    const result = await agent.run('go')
    expect(result).to.include({ stopReason: 'completed', text: 'gave up' })
    const answer = model.requests[1].messages.at(-1)
    expect(answer).to.include({ role: 'tool', isError: true })
    expect(answer?.content).to.match(/asked a question \(suspend\) but cannot be resumed/)
    expect(agent.parked).to.equal(undefined)
  })

  it('a suspension with a state over 4 KiB, a path too deep or a bad question is an error result naming the problem', async () => {
    const bad: Record<string, ToolSuspension> = {
      big: { question: question('q-1', 'x'), state: { blob: 'x'.repeat(5000) } },
      deep: { question: question('q-2', 'x', Array.from({ length: MAX_QUESTION_PATH + 1 }, (_, i) => `run-${i}`)) },
      kind: { question: { ...question('q-3', 'x'), kind: 'nope' as never } },
      cyclic: { question: question('q-4', 'x'), state: (() => { const o: Record<string, unknown> = {}; o.o = o; return o })() },
      options: { question: { ...question('q-5', 'x'), options: [{ id: 'a', name: 'n'.repeat(1025) }] } },
    }
    const tool = askTool({ execute: ({ q }: { q: string }) => ({ content: '', suspend: bad[q] }) })
    const model = new ScriptedModel([{ toolCalls: Object.keys(bad).map((q) => ({ name: 'ask', input: { q } })) }, { text: 'ok' }])
    const agent = await agentWith(model, tool)
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('completed')
    const contents = model.requests[1].messages.slice(-5).map((message) => message.content)
    expect(contents[0]).to.match(/suspend\.state is \d+ bytes as JSON; at most 4096/)
    expect(contents[1]).to.match(/question's path must be an array of at most 64 run ids/)
    expect(contents[2]).to.match(/question's kind must be one of/)
    expect(contents[3]).to.match(/not JSON-serialisable/)
    expect(contents[4]).to.match(/question's options must be an array of at most 64 \{ id, name \} strings/)
  })

  it('a question longer than MAX_QUESTION_LENGTH is cut with a marker; the state is kept as a JSON copy', async () => {
    const state = { n: 1, nested: { list: [1, 2] } }
    const tool = askTool({ execute: () => ({ content: '', suspend: { question: question('q-long', 'y'.repeat(MAX_QUESTION_LENGTH + 100)), state } }) })
    const model = new ScriptedModel([{ toolCalls: [{ name: 'ask', input: { q: 'x' } }] }])
    const agent = await agentWith(model, tool)
    const result = await agent.run('go')
    expect(result.question?.text).to.have.length(MAX_QUESTION_LENGTH)
    expect(result.question?.text).to.match(/\[… the question was cut at 16384 characters\]$/)
    state.n = 2
    expect(agent.checkpoint().parked?.suspended[0].suspension.state).to.deep.equal({ n: 1, nested: { list: [1, 2] } })
  })

  it('run while parked rejects with PARKED; resume when not parked with NOT_PARKED; a bad answer with INVALID_PROMPT', async () => {
    const model = new ScriptedModel([{ text: 'plain' }, { toolCalls: [{ name: 'ask', input: { q: 'x' } }] }, { text: 'end' }])
    const agent = await agentWith(model, askTool())
    const notParked = await agent.resume('x').catch((error) => error)
    expect(notParked).to.be.instanceOf(AgentError).with.property('code', 'NOT_PARKED')
    await agent.run('one')
    expect((await agent.run('two')).stopReason).to.equal('pending')
    const parked = await agent.run('three').catch((error) => error)
    expect(parked).to.be.instanceOf(AgentError).with.property('code', 'PARKED')
    expect(await agent.wake().catch((error) => error)).to.have.property('code', 'PARKED')
    for (const answer of ['', '   ', 42, 'z'.repeat(1024 * 1024 + 1)]) {
      const error = await agent.resume(answer as string).catch((caught) => caught)
      expect(error, String(answer).slice(0, 10)).to.be.instanceOf(AgentError).with.property('code', 'INVALID_PROMPT')
    }
    expect(agent.parked?.text).to.equal('x')
    expect((await agent.resume('ok')).stopReason).to.equal('completed')
  })

  it('a second resume while the first still runs rejects with BUSY', async () => {
    const gate = deferred<void>()
    const tool = askTool({ resume: async (answer: string) => { await gate.promise; return { content: answer } } })
    const agent = await agentWith(new ScriptedModel([{ toolCalls: [{ name: 'ask', input: { q: 'x' } }] }, { text: 'end' }]), tool)
    await agent.run('go')
    const first = agent.resume('one')
    const busy = await agent.resume('two').catch((error) => error)
    expect(busy).to.be.instanceOf(AgentError).with.property('code', 'BUSY')
    expect(await agent.run('x').catch((error) => error)).to.have.property('code', 'BUSY')
    gate.resolve()
    expect((await first).stopReason).to.equal('completed')
  })

  it('aborting a resume ends the turn aborted, balanced, and the agent can run again', async () => {
    const tool = askTool({ resume: (_answer: string, _s: ToolSuspension, exec) => new Promise((resolve) => exec.signal.addEventListener('abort', () => resolve({ content: 'late' }))) })
    const agent = await agentWith(new ScriptedModel([
      { toolCalls: [{ name: 'ask', input: { q: 'x' } }, { name: 'ask', input: { q: 'y' } }] }, { text: 'next turn' },
    ]), tool)
    await agent.run('go')
    const controller = new AbortController()
    const resumed = agent.resume('a', { signal: controller.signal })
    await tick()
    controller.abort('stop it')
    const result = await resumed
    expect(result).to.include({ stopReason: 'aborted', diagnostic: 'Aborted: stop it' })
    expect(agent.parked).to.equal(undefined)
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
    expect((await agent.run('again')).text).to.equal('next turn')
  })

  it('the note for calls dropped past maxToolCallsPerStep comes after every call of the step is answered: by a resume, or by an aborted one', async () => {
    ctx.plugin(toolPlugin(askTool()))
    await ctx.lifecycle.flush()
    const step = { toolCalls: [{ name: 'ask', input: { q: 'x' } }, { name: 'ask', input: { q: 'dropped' } }] }
    ctx.agents.registerModel('m', new ScriptedModel([step, { text: 'one' }, step]))
    const agent = ctx.agents.create({ model: 'm', maxToolCallsPerStep: 1 })
    const tail = () => agent.transcript.messages.slice(-2).map((message) => `${message.role}: ${message.content.slice(0, 20)}`)
    await agent.run('go')
    expect(agent.transcript.messages.at(-1)?.role).to.equal('assistant')
    await agent.resume('answered')
    expect(agent.transcript.completed().slice(-3, -1).map((message) => `${message.role}: ${message.content.slice(0, 20)}`))
      .to.deep.equal(['tool: x → answered', 'user: Not run: your last s'])
    await agent.run('again')
    const controller = new AbortController()
    controller.abort('no')
    expect((await agent.resume('late', { signal: controller.signal })).stopReason).to.equal('aborted')
    expect(tail()).to.deep.equal(['tool: Cancelled: the run w', 'user: Not run: your last s'])
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
  })

  it('dispose of a parked agent answers the open calls with an error result, so the transcript is balanced', async () => {
    const agent = await agentWith(new ScriptedModel([{ toolCalls: [{ name: 'ask', input: { q: 'x' } }, { name: 'echo', input: { text: 'e' } }] }]), askTool(), echo)
    await agent.run('go')
    await agent.dispose()
    const messages = agent.transcript.messages
    expect(isBalanced(messages)).to.equal(true)
    expect(messages.at(-1)).to.deep.include({ role: 'tool', name: 'ask', isError: true })
    expect(messages.at(-1)?.content).to.match(/^Closed while waiting for an answer/)
    expect(agent.transcript.completed()).to.have.length(messages.length)
    expect(agent.parked).to.equal(undefined)
    expect(await agent.resume('late').catch((error) => error)).to.have.property('code', 'DISPOSED')
  })

  it('onEvent sees pending and resumed; observers see a run end pending and a resumed run start with the question id', async () => {
    const seen: string[] = []
    const observer: AgentObserver = {
      runStart: (_agent, prompt, resumed) => { seen.push(`start ${prompt} ${resumed ?? '-'}`) },
      runEnd: (_agent, result: RunResult) => { seen.push(`end ${result.stopReason} ${result.steps}`) },
    }
    ctx.agents.observe(observer)
    const agent = await agentWith(new ScriptedModel([{ toolCalls: [{ name: 'ask', input: { q: 'x' } }] }, { text: 'end' }]), askTool())
    const events: AgentEvent[] = []
    await agent.run('go', { onEvent: (event) => events.push(event) })
    expect(events.at(-1)).to.deep.equal({ type: 'pending', step: 1, question: question('q-x', 'x') })
    const resumedEvents: AgentEvent[] = []
    await agent.resume('yes', { onEvent: (event) => resumedEvents.push(event) })
    expect(resumedEvents[0]).to.deep.equal({ type: 'resumed', step: 1, questionId: 'q-x' })
    expect(resumedEvents[1]).to.deep.include({ type: 'tool-result', step: 1, toolCallId: 'call_0_0', name: 'ask' })
    expect(resumedEvents.map((event) => event.type)).to.include('step-start')
    expect(seen).to.deep.equal(['start go -', 'end pending 1', 'start yes q-x', 'end completed 2'])
  })
})
