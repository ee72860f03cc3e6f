/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import type { ToolSuspension } from '@cordis-subagents/tools'
import { type AgentCheckpoint, AgentError, askParentTool, type ChatModel, ScriptedModel } from '@cordis-subagents/agent'
import { deferred, echo, isBalanced, makeTool, setup, toolPlugin } from './helpers.js'

const usage = { inputTokens: 10, outputTokens: 2 }

/** JSON through a string, as a database would hand it back. */
function stored<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T
}

describe('checkpoint and restore: an agent as plain JSON, rebuilt later', () => {
  const contexts: Context[] = []

  afterEach(async () => {
    for (const ctx of contexts.splice(0)) await ctx.stop()
  })

  /** A host: a fresh context with the ask tool, echo, and model `m`. */
  async function host(model: ChatModel): Promise<Context> {
    const { ctx } = await setup()
    contexts.push(ctx)
    ctx.plugin(toolPlugin(askParentTool(), echo))
    await ctx.lifecycle.flush()
    ctx.agents.registerModel('m', model)
    return ctx
  }

  it('a parked agent, restored on another host from its JSON checkpoint, is parked on the same question and its resume finishes the turn with tallies that go on', async () => {
    const first = await host(new ScriptedModel([
      { text: 'warm-up' },
      { toolCalls: [{ name: 'echo', input: { text: 'a' } }, { name: 'ask_parent', input: { question: 'Which branch?' } }] },
    ], { usage }))
    const agent = first.agents.create({ model: 'm', label: 'worker', persona: 'You work.', maxSteps: 7 })
    await agent.run('hello')
    const parked = await agent.run('do the task')
    expect(parked.stopReason).to.equal('pending')
    expect(parked.question).to.include({ kind: 'ask', text: 'Which branch?' })
    expect(parked.question?.id).to.match(/^q-[0-9a-f-]{36}$/)
    const checkpoint = stored(agent.checkpoint())
    expect(checkpoint).to.include({ v: 1, id: agent.id, label: 'worker', depth: 0, persona: 'You work.', model: 'm', maxSteps: 7 })
    expect(checkpoint.parked).to.include({ turnStart: 2, step: 1, steps: 1, toolCalls: 2, text: '' })
    expect(checkpoint.parked?.suspended.map((entry) => entry.call.name)).to.deep.equal(['ask_parent'])
    await first.stop()

    const model = new ScriptedModel([{ text: 'main it is' }], { usage })
    const second = await host(model)
    const restored = second.agents.create({ restore: checkpoint })
    expect(restored).to.include({ id: agent.id, label: 'worker', depth: 0, persona: 'You work.', model: 'm', maxSteps: 7 })
    expect(restored.parked).to.deep.equal(parked.question)
    expect(restored.transcript.messages).to.deep.equal(checkpoint.messages)
    expect(restored.transcript.completed()).to.have.length(2)
    expect(restored.usage.total).to.deep.include({ inputTokens: 20, outputTokens: 4 })
    expect(await restored.run('x').catch((error) => error)).to.have.property('code', 'PARKED')

    const done = await restored.resume('main')
    expect(done).to.include({ stopReason: 'completed', text: 'main it is', steps: 2, toolCalls: 2 })
    expect(done.usage).to.deep.include({ inputTokens: 20, outputTokens: 4 })
    expect(restored.usage.total).to.deep.include({ inputTokens: 30, outputTokens: 6 })
    expect(restored.work.own).to.deep.include({ steps: 3, toolCalls: 2 })
    expect(model.requests[0].messages.slice(-3).map((message) => message.content)).to.deep.equal(['', 'echo a', 'main'])
    expect(isBalanced(restored.transcript.messages)).to.equal(true)
    await restored.dispose()
  })

  it('a checkpoint taken while a turn runs holds only the completed turns, and restores idle', async () => {
    const gate = deferred<void>()
    const ctx = await host(new ScriptedModel([{ text: 'one' }, async () => { await gate.promise; return { text: 'two' } }, { text: 'three' }]))
    const agent = ctx.agents.create({ model: 'm' })
    await agent.run('first')
    const running = agent.run('second')
    const checkpoint = stored(agent.checkpoint())
    expect(checkpoint.parked).to.equal(undefined)
    expect(checkpoint.messages.map((message) => message.content)).to.deep.equal(['first', 'one'])
    gate.resolve()
    await running
    const restored = ctx.agents.create({ restore: checkpoint })
    expect(restored.parked).to.equal(undefined)
    expect((await restored.run('third')).text).to.equal('three')
    expect(restored.transcript.completed().map((message) => message.content)).to.deep.equal(['first', 'one', 'third', 'three'])
  })

  it('checkpointLater() of a disposed agent makes, when called, the checkpoint the agent itself gives (settings, transcript, tallies, output)', async () => {
    const ctx = await host(new ScriptedModel([{ toolCalls: [{ id: 'c1', name: 'echo', input: { text: 'hi' } }], usage }, { text: '{"n":1}', usage }]))
    const agent = ctx.agents.create({ model: 'm', label: 'writer', persona: 'careful', maxSteps: 7, maxTokens: 900, output: { schema: { type: 'object' } } })
    expect((await agent.run('first')).value).to.deep.equal({ n: 1 })
    await agent.dispose()
    const later = agent.checkpointLater()
    expect(later()).to.deep.equal(agent.checkpoint())
    expect(later().messages.map((message) => message.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant'])
    expect(later().usage.own).to.deep.equal({ inputTokens: 20, outputTokens: 4 })
    // A restore of it is the agent again, under a new host's runtime.
    const restored = (await host(new ScriptedModel([{ text: 'again' }]))).agents.create({ restore: stored(later()) })
    expect([restored.id, restored.persona, restored.maxSteps]).to.deep.equal([agent.id, 'careful', 7])
  })

  it('an agent\'s lifetime (internal) aborts when it is disposed, once: what a book keeps of it is let go then', async () => {
    const ctx = await host(new ScriptedModel([{ text: 'done' }]))
    const agent = ctx.agents.create({ model: 'm' })
    const lifetime = (agent as unknown as { lifetime: { aborted: boolean; onAbort(callback: () => void): () => void } }).lifetime
    let told = 0
    lifetime.onAbort(() => told++)
    const stop = lifetime.onAbort(() => told += 10)
    stop()
    await agent.run('go')
    expect([lifetime.aborted, told]).to.deep.equal([false, 0])
    await agent.dispose()
    await agent.dispose()
    expect([lifetime.aborted, told]).to.deep.equal([true, 1])
  })

  it('ids minted after a restore skip the restored id', async () => {
    const ctx = await host(new ScriptedModel([]))
    const checkpoint = stored(ctx.agents.create({ model: 'm' }).checkpoint())
    const restored = ctx.agents.create({ restore: { ...checkpoint, id: 'agent-41' } })
    expect(restored.id).to.equal('agent-41')
    expect(ctx.agents.create({}).id).to.equal('agent-42')
  })

  it('restore takes parent, tools, budget, hooks, metrics and the aids; a depth that does not fit the parent, or any other option, is INVALID_OPTIONS', async () => {
    const ctx = await host(new ScriptedModel([]))
    const parent = ctx.agents.create({ model: 'm' })
    const child = ctx.agents.create({ model: 'm', parent })
    const checkpoint = stored(child.checkpoint())
    const restored = ctx.agents.create({ restore: checkpoint, parent, tools: ctx.tools.view().restrict({ allow: ['echo'] }), budget: { maxSteps: 3 } })
    expect(restored).to.include({ depth: 1, parent })
    expect(restored.tools.names()).to.deep.equal(['echo'])
    expect(() => ctx.agents.create({ restore: checkpoint })).to.not.throw()
    expect(() => ctx.agents.create({ restore: checkpoint, parent: child })).to.throw(AgentError, /depth is 1 but the parent's child depth is 2/)
    expect(() => ctx.agents.create({ restore: checkpoint, model: 'm' }))
      .to.throw(AgentError, /comes with only parent, standIn, tools, budget, hooks, metrics, budgetNote, tellParent, tellTo and ownTools/)
    expect(() => ctx.agents.create({ restore: checkpoint, model: 'm' })).to.throw(AgentError, /holds the rest \(drop model\)/)
    // A served agent restored from its checkpoint gets its aids again from its crossing (they are not in the checkpoint).
    expect(ctx.agents.create({ restore: checkpoint, parent, budgetNote: true, tellParent: true }).tools.names()).to.include('tell_parent')
    expect(ctx.agents.create({ restore: checkpoint, parent, tools: ctx.tools.view().restrict({ allow: ['echo'] }), ownTools: [makeTool('mine', {})] }).tools.names())
      .to.deep.equal(['echo', 'mine'])
  })

  it('standIn: a stand-in parent (the own one is gone) keeps the stored depth, never shallower than its child depth', async () => {
    const ctx = await host(new ScriptedModel([]))
    const root = ctx.agents.create({ model: 'm', label: 'root' })
    const mid = ctx.agents.create({ model: 'm', parent: root })
    const deep = ctx.agents.create({ model: 'm', parent: mid })
    const checkpoint = stored(ctx.agents.create({ model: 'm', parent: deep }).checkpoint())
    expect(checkpoint.depth).to.equal(3)
    // A live parent whose child depth is not the stored one: refused, saying what to do.
    const mismatch = /depth is 3 but the parent's child depth is 1; restore the agent under the parent it had, or pass standIn: true/
    expect(() => ctx.agents.create({ restore: checkpoint, parent: root })).to.throw(AgentError, mismatch)
    expect(() => ctx.agents.create({ restore: checkpoint, parent: root, standIn: false })).to.throw(AgentError, mismatch)
    // A stand-in root (a restart's): the stored depth, and tools meant for shallower agents hidden as at that depth.
    const shallow = makeTool('shallow', { maxCallerDepth: 2 })
    ctx.plugin(toolPlugin(shallow))
    await ctx.lifecycle.flush()
    const restored = ctx.agents.create({ restore: checkpoint, parent: root, standIn: true })
    expect(restored).to.include({ depth: 3, parent: root, id: checkpoint.id })
    expect(restored.tools.names()).to.not.include('shallow')
    expect(ctx.agents.create({ restore: checkpoint, parent: mid, standIn: true }).depth).to.equal(3)
    // A stand-in deeper than the stored parent: its child depth (never shallower than either).
    const deeper = ctx.agents.create({ model: 'm', parent: ctx.agents.create({ model: 'm', parent: deep }) })
    expect(ctx.agents.create({ restore: checkpoint, parent: deeper, standIn: true }).depth).to.equal(deeper.depth + 1)
    // Only with a parent, and only a boolean.
    expect(() => ctx.agents.create({ restore: checkpoint, standIn: true })).to.throw(AgentError, /standIn .* true without a parent/)
    const notBoolean = () => ctx.agents.create({ restore: checkpoint, parent: root, standIn: 'yes' as never })
    expect(notBoolean).to.throw(AgentError, /options\.standIn is true or false/)
  })

  describe('a restore input is checked field by field (it comes from a database)', () => {
    let good: AgentCheckpoint
    let ctx: Context

    beforeEach(async () => {
      ctx = await host(new ScriptedModel([
        { toolCalls: [{ name: 'ask_parent', input: { question: 'q?' } }, { name: 'ask_parent', input: { question: 'r?' } }] },
        { text: 'both' },
      ]))
      const agent = ctx.agents.create({ model: 'm' })
      await agent.run('go')
      good = stored(agent.checkpoint())
    })

    const cases: [string, (cp: any) => void, RegExp][] = [
      ['messages that are not an array', (cp) => { cp.messages = 'x' }, /options\.restore\.messages must be an array/],
      ['another version', (cp) => { cp.v = 2 }, /options\.restore\.v must be 1/],
      ['a missing id', (cp) => { delete cp.id }, /options\.restore\.id must be a string/],
      ['a relative cwd', (cp) => { cp.cwd = 'here' }, /options\.restore\.cwd must be an absolute path/],
      ['a fractional depth', (cp) => { cp.depth = 1.5 }, /options\.restore\.depth must be an integer >= 0/],
      ['maxSteps 0', (cp) => { cp.maxSteps = 0 }, /options\.restore\.maxSteps must be an integer >= 1/],
      ['a bad role', (cp) => { cp.messages[0].role = 'system' }, /options\.restore\.messages\[0\]\.role must be user, assistant or tool/],
      ['content not a string', (cp) => { cp.messages[0].content = 5 }, /messages\[0\]\.content must be a string/],
      ['a bad usage', (cp) => { cp.usage.own.inputTokens = -1 }, /options\.restore\.usage\.own must be a usage/],
      ['a bad work tally', (cp) => { cp.work.delegated = { steps: 1 } }, /options\.restore\.work\.delegated\.toolCalls must be an integer/],
      ['a result for no call', (cp) => { cp.messages.push({ role: 'tool', toolCallId: 'nope', name: 'x', content: 'y' }) }, /answers no open tool call \(nope\)/],
      ['a suspended call that is answered', (cp) => { cp.parked.suspended.pop() }, /parked\.suspended must be exactly the unanswered calls/],
      ['a question that is not the first call\'s', (cp) => { cp.parked.question.id = 'q-other' }, /parked\.question is not the first suspended call's question/],
      ['a question of an unknown kind', (cp) => { cp.parked.question.kind = 'maybe' }, /bad question: the question's kind must be one of/],
      ['a state too large', (cp) => { cp.parked.suspended[0].suspension.state = 'x'.repeat(5000) }, /bad suspension: suspend\.state is \d+ bytes/],
      ['a turn start past the end', (cp) => { cp.parked.turnStart = 99 }, /parked\.turnStart is past the last message/],
      ['open calls and no parked turn', (cp) => { delete cp.parked }, /end with unanswered tool calls but the checkpoint has no parked turn/],
      ['a step past the steps', (cp) => { cp.parked.step = 5 }, /parked\.step is past the turn's steps/],
    ]
    for (const [what, spoil, message] of cases) {
      it(`rejects ${what}`, () => {
        const checkpoint = stored(good) as any
        spoil(checkpoint)
        expect(() => ctx.agents.create({ restore: checkpoint })).to.throw(AgentError, message).with.property('code', 'INVALID_OPTIONS')
      })
    }

    it('accepts the untouched checkpoint and keeps no unknown fields', () => {
      const agent = ctx.agents.create({ restore: { ...stored(good), extra: 'dropped' } as AgentCheckpoint })
      expect(agent.parked?.text).to.equal('q?')
      expect(agent.checkpoint()).to.not.have.property('extra')
      expect(agent.checkpoint()).to.deep.equal(good)
    })

    it('a restored parked turn takes both answers in order', async () => {
      const agent = ctx.agents.create({ restore: good })
      expect((await agent.resume('Q')).question?.text).to.equal('r?')
      const suspension: ToolSuspension = agent.checkpoint().parked!.suspended[0].suspension
      expect(suspension.question.text).to.equal('r?')
      expect(await agent.resume('R')).to.include({ stopReason: 'completed', text: 'both', steps: 2, toolCalls: 2 })
    })
  })
})
