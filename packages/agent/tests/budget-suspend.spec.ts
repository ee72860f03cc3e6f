/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { AgentError, askParentTool, type BudgetEvent, ScriptedModel } from '@cordis-subagents/agent'
import { echo, isBalanced, setup, toolPlugin } from './helpers.js'

describe('onBudget suspend: a run parks at a limit instead of stopping', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
    ctx.plugin(toolPlugin(echo, askParentTool()))
    await ctx.lifecycle.flush()
  })

  afterEach(async () => {
    await ctx.stop()
  })

  it('parks with a budget question naming the limit and the spend; resume after an extension goes on', async () => {
    const events: BudgetEvent[] = []
    ctx.agents.onBudget((event) => {
      events.push(event)
      event.suspend()
    })
    const model = new ScriptedModel([{ toolCalls: [{ name: 'echo', input: { text: 'a' } }] }, { text: 'finished' }])
    ctx.agents.registerModel('m', model)
    const agent = ctx.agents.create({ model: 'm', budget: { maxSteps: 1 } })
    const parked = await agent.run('go')
    expect(parked).to.include({ stopReason: 'pending', steps: 1, toolCalls: 1 })
    expect(parked.question).to.include({ kind: 'budget' })
    expect(parked.question?.path).to.deep.equal([])
    expect(parked.question?.text).to.include('the steps budget (1 model calls; 1 spent)')
    expect(agent.parked).to.deep.equal(parked.question)
    expect(model.callCount).to.equal(1)
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
    expect(agent.checkpoint().parked).to.deep.include({ budget: { budget: 'steps', limit: 1, spent: 1 }, suspended: [] })

    agent.budget.extend(events[0].breach, 1)
    const done = await agent.resume('extended by one step')
    expect(done).to.include({ stopReason: 'completed', text: 'finished', steps: 2, toolCalls: 1 })
    expect(events).to.have.length(1)
  })

  it('resume without an extension asks the handlers again: they may suspend again, or let it stop with `budget`', async () => {
    let suspend = true
    ctx.agents.onBudget((event) => { if (suspend) event.suspend() })
    ctx.agents.registerModel('m', new ScriptedModel([{ toolCalls: [{ name: 'echo', input: { text: 'a' } }] }]))
    const agent = ctx.agents.create({ model: 'm', budget: { maxSteps: 1 } })
    expect((await agent.run('go')).stopReason).to.equal('pending')
    expect((await agent.resume('not extended')).stopReason).to.equal('pending')
    suspend = false
    const stopped = await agent.resume('still not extended')
    expect(stopped).to.include({ stopReason: 'budget' })
    expect(stopped.budget).to.deep.equal({ budget: 'steps', limit: 1, spent: 1 })
    expect(agent.parked).to.equal(undefined)
  })

  it('at the tool-call limit the refused calls are answered, the run parks before its next step, and an extension gives the tools back', async () => {
    let breach: BudgetEvent['breach'] | undefined
    ctx.agents.onBudget((event) => {
      breach = event.breach
      event.suspend()
    })
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'echo', input: { text: 'a' } }, { name: 'echo', input: { text: 'b' } }] },
      { toolCalls: [{ name: 'echo', input: { text: 'b' } }] },
      { text: 'all done' },
    ])
    ctx.agents.registerModel('m', model)
    const agent = ctx.agents.create({ model: 'm', budget: { maxToolCalls: 1 } })
    const parked = await agent.run('go')
    expect(parked).to.include({ stopReason: 'pending', toolCalls: 1 })
    expect(parked.question?.text).to.include('the toolCalls budget')
    expect(agent.transcript.messages.at(-1)?.content).to.match(/^Not run: the toolCalls budget/)
    agent.budget.extend(breach!, 5)
    const done = await agent.resume('more tool calls allowed')
    expect(done).to.include({ stopReason: 'completed', text: 'all done', toolCalls: 2 })
    expect(model.requests[1].tools.map((tool) => tool.name)).to.include('echo')
  })

  it('a resume goes on with the same tree budget (a root\'s is renewed by run, not by resume) and reports spend to its onSpend', async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'ask_parent', input: { question: 'go on?' } }] },
      { toolCalls: [{ name: 'echo', input: { text: 'a' } }] },
      { toolCalls: [{ name: 'echo', input: { text: 'b' } }] },
      { text: 'never reached' },
    ])
    ctx.agents.registerModel('m', model)
    const agent = ctx.agents.create({ model: 'm', budget: { maxSteps: 3 } })
    expect((await agent.run('go')).stopReason).to.equal('pending')
    const spends: number[] = []
    const result = await agent.resume('yes', { onSpend: (spent) => spends.push(spent.steps) })
    expect(result).to.include({ stopReason: 'budget', steps: 3 })
    expect(result.budget).to.deep.equal({ budget: 'steps', limit: 3, spent: 3 })
    expect(model.callCount).to.equal(3)
    expect(spends.filter((steps, i) => steps !== spends[i - 1])).to.deep.equal([2, 3])
  })

  it('a turn parked at a budget restores parked at it; the restored root budget is charged with what the turn spent', async () => {
    ctx.agents.onBudget((event) => event.suspend())
    ctx.agents.registerModel('m', new ScriptedModel([{ toolCalls: [{ name: 'echo', input: { text: 'a' } }] }, { text: 'after restore' }]))
    const agent = ctx.agents.create({ model: 'm', budget: { maxSteps: 1 } })
    const parked = await agent.run('go')
    const checkpoint = JSON.parse(JSON.stringify(agent.checkpoint()))
    await agent.dispose()
    const restored = ctx.agents.create({ restore: checkpoint, budget: { maxSteps: 1 } })
    expect(restored.parked).to.deep.equal(parked.question)
    expect(restored.budget.spent.steps).to.equal(1)
    expect((await restored.resume('no extension')).stopReason).to.equal('pending')
    restored.budget.extend({ budget: 'steps', limit: 1, spent: 1 }, 1)
    expect(await restored.resume('extended')).to.include({ stopReason: 'completed', text: 'after restore', steps: 2 })
  })

  it('the wall-clock deadline moves by the time the turn was parked', async () => {
    ctx.agents.registerModel('m', new ScriptedModel([{ toolCalls: [{ name: 'ask_parent', input: { question: 'wait?' } }] }, { text: 'ok' }]))
    const agent = ctx.agents.create({ model: 'm', budget: { maxWallMs: 600_000 } })
    await agent.run('go')
    const before = agent.budget.deadline
    const parkedFrom = performance.now()
    await new Promise((resolve) => setTimeout(resolve, 30))
    const parkedFor = performance.now() - parkedFrom
    let during = 0
    const resumed = agent.resume('yes', { onEvent: (event) => { if (event.type === 'resumed') during = agent.budget.deadline } })
    expect((await resumed).stopReason).to.equal('completed')
    expect(during - before).to.be.at.least(parkedFor)
  })
})

describe('askParentTool', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  it('suspends with an ask question (fresh q- id, empty path), and its answer is the call\'s result', async () => {
    ctx.plugin(toolPlugin(askParentTool({ name: 'ask_boss', description: 'Ask the boss.' })))
    await ctx.lifecycle.flush()
    expect(ctx.tools.view().list()).to.deep.include({
      name: 'ask_boss', description: 'Ask the boss.',
      parameters: ctx.tools.view().list()[0].parameters,
    })
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'ask_boss', input: { question: 'Ship it?' } }, { name: 'ask_boss', input: { question: '' } }] },
      { text: 'shipping' },
    ])
    ctx.agents.registerModel('m', model)
    const agent = ctx.agents.create({ model: 'm' })
    const parked = await agent.run('go')
    expect(parked.question).to.deep.include({ kind: 'ask', text: 'Ship it?', path: [] })
    expect(parked.question?.id).to.match(/^q-[0-9a-f-]{36}$/)
    const done = await agent.resume('Yes, ship it.')
    expect(done.text).to.equal('shipping')
    const results = model.requests[1].messages.filter((message) => message.role === 'tool')
    // The empty question is refused by the input schema; it never parks.
    expect(results.map((message) => [message.content.slice(0, 40), message.isError ?? false])).to.deep.equal([
      ['Invalid input for tool "ask_boss":\n✖ Too', true],
      ['Yes, ship it.', false],
    ])
  })

  it('two asks get different ids; a bad name or description is INVALID_OPTIONS', async () => {
    const tool = askParentTool()
    expect(tool.name).to.equal('ask_parent')
    const exec = { signal: new AbortController().signal, agent: { id: 'a', depth: 1 }, toolCallId: 'c' }
    const one = await tool.execute({ question: 'a' }, exec)
    const two = await tool.execute({ question: 'a' }, exec)
    expect(one.suspend?.question.id).to.not.equal(two.suspend?.question.id)
    expect(() => askParentTool({ name: 'has space' })).to.throw(AgentError, /not a tool name/)
    expect(() => askParentTool({ description: ' ' })).to.throw(AgentError, /description must be a non-empty string/)
  })
})
