/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { LimitError } from '@cordis-subagents/shared'
import {
  abortFlat, type Agent, type AssistantMessage, type BudgetEvent, type ChatModel, type GenerateRequest, ScriptedModel,
} from '@cordis-subagents/agent'
import { isBalanced, makeTool, setup, toolPlugin } from './helpers.js'

/** A model whose every call hangs until the request's signal aborts. */
function hangingModel(): ChatModel {
  return {
    generate: (request: GenerateRequest) => new Promise((_, reject) => {
      request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
    }),
  }
}

/** A model that asks for `calls` echo calls every step, reporting `tokens` output tokens per call. */
function alwaysCalls(calls = 1, tokens = 0): ScriptedModel {
  return new ScriptedModel(() => ({
    toolCalls: Array.from({ length: calls }, (_, i) => ({ name: 'echo', input: { text: String(i) } })),
    ...tokens ? { usage: { inputTokens: 0, outputTokens: tokens } } : {},
  }))
}

describe('limits in the loop: tree budgets, fan-out cap, limit stop reasons', () => {
  let ctx: Context
  let ran: number

  beforeEach(async () => {
    ({ ctx } = await setup())
    ran = 0
    ctx.plugin(toolPlugin(makeTool('echo', { execute: async ({ text }) => { ran++; return { content: `echo ${text}` } } })))
    await ctx.lifecycle.flush()
  })

  afterEach(async () => {
    await ctx.stop()
  })

  function agentWith(model: ChatModel, options: Parameters<Context['agents']['create']>[0] = {}): Agent {
    ctx.agents.registerModel('m', model)
    return ctx.agents.create({ model: 'm', ...options })
  }

  describe('budgets at their boundary', () => {
    it('steps: exactly maxSteps model calls, then a loud `budget` stop naming the limit', async () => {
      const model = alwaysCalls()
      const agent = agentWith(model, { budget: { maxSteps: 3 } })
      const result = await agent.run('go')
      expect(model.callCount).to.equal(3)
      expect(result.stopReason).to.equal('budget')
      expect(result.budget).to.deep.equal({ budget: 'steps', limit: 3, spent: 3 })
      expect(result.diagnostic).to.include('steps budget').and.include('3')
      expect(isBalanced(agent.transcript.messages)).to.equal(true)
    })

    it('tokens: a model\'s usage that is no count (negative, fractional) charges nothing for it, and cannot give the budget back', async () => {
      const usages = [
        { inputTokens: 600, outputTokens: 0 }, { inputTokens: -1_000_000, outputTokens: 1.5 }, { inputTokens: 300, outputTokens: 200 },
      ]
      let step = 0
      const model = new ScriptedModel(() => ({
        toolCalls: [{ name: 'echo', input: { text: 'x' } }], usage: usages[Math.min(step++, 2)] as never,
      }))
      const agent = agentWith(model, { budget: { maxTokens: 1000 } })
      const result = await agent.run('go')
      expect(result.stopReason).to.equal('budget')
      expect(result.budget).to.deep.include({ budget: 'tokens', limit: 1000 })
      // 600, then nothing for the malformed report, then 500: the third step passes the limit, no fourth runs.
      expect(model.callCount).to.equal(3)
      expect(agent.usage.own).to.deep.equal({ inputTokens: 900, outputTokens: 200 })
    })

    it('tokens: model calls go on while tokens are left; spend passes the limit by at most one step', async () => {
      const model = alwaysCalls(1, 40)
      const agent = agentWith(model, { budget: { maxTokens: 100 } })
      const result = await agent.run('go')
      // 0, 40, 80 spent before calls 1-3; 120 >= 100 before call 4.
      expect(model.callCount).to.equal(3)
      expect(result).to.include({ stopReason: 'budget' })
      expect(result.budget).to.deep.equal({ budget: 'tokens', limit: 100, spent: 120 })
      expect(agent.budget.spent.tokens).to.equal(120)
    })

    it('tool calls: the ones past the budget are refused readably, then one last step without tools whose answer ends as `budget`', async () => {
      const model = new ScriptedModel([
        { toolCalls: [1, 2, 3].map((n) => ({ name: 'echo', input: { text: String(n) } })) },
        (request) => ({ text: `final, with ${request.tools.length} tools offered` }),
      ])
      const agent = agentWith(model, { budget: { maxToolCalls: 2 } })
      const result = await agent.run('go')
      expect(ran).to.equal(2)
      const results = agent.transcript.messages.filter((m) => m.role === 'tool')
      expect(results.map((m) => !!(m as { isError?: boolean }).isError)).to.deep.equal([false, false, true])
      expect(results[2].content).to.include('toolCalls budget').and.include('Answer with what you have')
      // The answer stands as the run's text, but the work behind it is incomplete: a limit, never a success.
      expect(result).to.include({ stopReason: 'budget', text: 'final, with 0 tools offered', toolCalls: 2 })
      expect(result.budget).to.deep.equal({ budget: 'toolCalls', limit: 2, spent: 2 })
      expect(result.diagnostic).to.include('toolCalls budget (2 tool calls; 2 spent)').and.include('partial')
      expect(isBalanced(agent.transcript.messages)).to.equal(true)
    })

    it('tool calls: an onBudget handler that extends the tool-call budget lets the run complete', async () => {
      const model = new ScriptedModel([
        { toolCalls: [1, 2, 3].map((n) => ({ name: 'echo', input: { text: String(n) } })) },
        { text: 'final' },
      ])
      const agent = agentWith(model, { budget: { maxToolCalls: 2 } })
      ctx.agents.onBudget((event) => event.extend(1))
      const result = await agent.run('go')
      expect(ran).to.equal(3)
      expect(result).to.include({ stopReason: 'completed', text: 'final', toolCalls: 3 })
    })

    it('tool calls: a model that asks for tools again after being told is stopped with `budget`', async () => {
      const model = alwaysCalls(2)
      const agent = agentWith(model, { budget: { maxToolCalls: 1 } })
      const result = await agent.run('go')
      expect(ran).to.equal(1)
      expect(model.callCount).to.equal(2)
      expect(result.stopReason).to.equal('budget')
      expect(result.budget).to.include({ budget: 'toolCalls', limit: 1 })
      expect(isBalanced(agent.transcript.messages)).to.equal(true)
    })

    it('wall time: a hanging model call is stopped by maxWallMs as `budget`, not `aborted`', async () => {
      const hang = hangingModel()
      const agent = agentWith(hang, { budget: { maxWallMs: 30 } })
      const result = await agent.run('go')
      expect(result.stopReason).to.equal('budget')
      expect(result.budget).to.include({ budget: 'wallMs', limit: 30 })
      expect(result.diagnostic).to.include('wallMs budget')
    })

    it('a root agent gets a fresh budget for every run (a tree\'s limits are per root run)', async () => {
      const model = new ScriptedModel(() => ({ text: 'ok' }))
      const agent = agentWith(model, { budget: { maxSteps: 1 } })
      expect((await agent.run('one')).stopReason).to.equal('completed')
      expect((await agent.run('two')).stopReason).to.equal('completed')
    })

    it('a child created with a parent spends from the parent\'s budget', async () => {
      const model = new ScriptedModel(() => ({ text: 'ok' }))
      ctx.agents.registerModel('m', model)
      const parent = ctx.agents.create({ model: 'm', budget: { maxSteps: 1 } })
      const child = ctx.agents.create({ parent })
      expect(child.budget.parent).to.equal(parent.budget)
      expect((await child.run('first')).stopReason).to.equal('completed')
      const second = await child.run('second')
      expect(second.stopReason).to.equal('budget')
      expect(second.budget).to.deep.equal({ budget: 'steps', limit: 1, spent: 1 })
    })
  })

  describe('maxToolCallsPerStep', () => {
    it('a 5,000-call step runs 32 calls; the other 4,968 are dropped and answered by one note; the transcript stays balanced', async () => {
      const model = new ScriptedModel([
        { toolCalls: Array.from({ length: 5000 }, (_, i) => ({ name: 'echo', input: { text: String(i) } })) },
        { text: 'done' },
      ])
      const agent = agentWith(model)
      const events: string[] = []
      const result = await agent.run('go', { onEvent: (event) => events.push(event.type) })
      expect(ran).to.equal(32)
      expect(result).to.include({ stopReason: 'completed', toolCalls: 32 })
      const messages = agent.transcript.messages
      // user, assistant (32 calls), 32 results, the note, the final answer: O(cap), not O(calls).
      expect(messages).to.have.length(36)
      expect((messages[1] as AssistantMessage).toolCalls).to.have.length(32)
      expect(messages.filter((m) => m.role === 'tool')).to.have.length(32)
      expect(messages.filter((m) => m.role === 'tool' && m.isError)).to.have.length(0)
      const note = messages[34]
      expect(note.role).to.equal('user')
      expect(note.content).to.include('asked for 5000 tool calls').and.include('at most 32 run per step')
        .and.include('maxToolCallsPerStep').and.include('other 4968 were dropped')
      expect(isBalanced(messages)).to.equal(true)
      // The model reads the note with the results, in its next request.
      expect(model.requests[1].messages.at(-1)).to.deep.equal(note)
      expect(model.requests[0].maxToolCalls).to.equal(32)
      expect(events.filter((type) => type === 'tool-call')).to.have.length(32)
    })

    it('counts calls an adapter dropped before the agent saw them (droppedToolCalls) in the one note', async () => {
      let calls = 0
      const model: ChatModel = {
        generate: async () => (calls++ ? { text: 'done', toolCalls: [], finishReason: 'stop' } : {
          text: '',
          toolCalls: [{ id: 'a', name: 'echo', input: { text: 'a' } }, { id: 'b', name: 'echo', input: { text: 'b' } }],
          finishReason: 'tool-calls',
          droppedToolCalls: 199_998,
        }),
      }
      const agent = agentWith(model, { maxToolCallsPerStep: 2 })
      const result = await agent.run('go')
      expect(result).to.include({ stopReason: 'completed', toolCalls: 2 })
      const messages = agent.transcript.messages
      expect(messages).to.have.length(6)
      expect(messages[4].content).to.include('asked for 200000 tool calls').and.include('other 199998 were dropped')
      expect(isBalanced(messages)).to.equal(true)
    })

    it('adds the note after the synthetic results when the response ended with `length`', async () => {
      const model = new ScriptedModel([
        { toolCalls: Array.from({ length: 50 }, (_, i) => ({ name: 'echo', input: { text: String(i) } })), finishReason: 'length' },
      ])
      const agent = agentWith(model, { maxToolCallsPerStep: 4 })
      const result = await agent.run('go')
      expect(result.stopReason).to.equal('max-tokens')
      expect(ran).to.equal(0)
      const messages = agent.transcript.completedMessages()
      expect(messages).to.have.length(7)
      expect(messages.slice(2, 6).every((m) => m.role === 'tool' && m.isError)).to.equal(true)
      expect(messages[6]).to.include({ role: 'user' })
      expect(messages[6].content).to.include('other 46 were dropped')
      expect(isBalanced(messages)).to.equal(true)
    })

    it('is configurable per agent; a non-positive value is refused', async () => {
      const model = alwaysCalls(5)
      ctx.agents.registerModel('m', model)
      const agent = ctx.agents.create({ model: 'm', maxToolCallsPerStep: 2, budget: { maxSteps: 1 } })
      await agent.run('go')
      expect(ran).to.equal(2)
      expect(() => ctx.agents.create({ model: 'm', maxToolCallsPerStep: 0 })).to.throw(/maxToolCallsPerStep/)
    })
  })

  describe('limit stop reasons', () => {
    it('an abort whose reason is a TIMEOUT limit ends `timeout`; a BUDGET one `budget`; any other `aborted`', async () => {
      const hang = hangingModel()
      ctx.agents.registerModel('m', hang)
      const stopWith = async (reason: unknown) => {
        const controller = new AbortController()
        const running = ctx.agents.create({ model: 'm' }).run('go', { signal: controller.signal })
        setTimeout(() => controller.abort(reason), 5)
        return running
      }
      const timeout = await stopWith(new LimitError('TIMEOUT', 'the tool\'s timeout of 5 ms elapsed'))
      expect(timeout).to.include({ stopReason: 'timeout' })
      expect(timeout.diagnostic).to.include('5 ms')
      const budget = await stopWith(new LimitError('BUDGET_EXCEEDED', 'x', { budget: 'tokens', limit: 10, spent: 12 }))
      expect(budget).to.include({ stopReason: 'budget' })
      expect(budget.budget).to.deep.equal({ budget: 'tokens', limit: 10, spent: 12 })
      const cancel = await stopWith('the user pressed Ctrl-C')
      expect(cancel).to.include({ stopReason: 'aborted', diagnostic: 'Aborted: the user pressed Ctrl-C' })
    })
  })

  describe('onBudget: operators observe and may extend', () => {
    it('a handler sees the breach and can extend the budget; a throwing handler is isolated', async () => {
      const seen: BudgetEvent['breach'][] = []
      let extensions = 0
      ctx.agents.onBudget(() => { throw new Error('a broken handler') })
      ctx.agents.onBudget((event) => {
        seen.push({ ...event.breach })
        if (extensions++ < 2) event.extend(1)
      })
      const model = alwaysCalls()
      const agent = agentWith(model, { budget: { maxSteps: 2 } })
      const result = await agent.run('go')
      expect(model.callCount).to.equal(4) // 2 + two extensions of 1
      expect(result.stopReason).to.equal('budget')
      expect(result.budget).to.deep.equal({ budget: 'steps', limit: 4, spent: 4 })
      expect(seen.map((b) => b.limit)).to.deep.equal([2, 3, 4])
    })

    it('wall time can be extended: the run\'s timer is re-armed for the new deadline', async () => {
      const extended: number[] = []
      ctx.agents.onBudget((event) => {
        if (event.breach.budget !== 'wallMs' || extended.length) return
        extended.push(event.breach.limit)
        event.extend(40)
      })
      const hang = hangingModel()
      const began = performance.now()
      const result = await agentWith(hang, { budget: { maxWallMs: 20 } }).run('go')
      expect(extended).to.deep.equal([20])
      expect(result.stopReason).to.equal('budget')
      expect(result.budget).to.include({ budget: 'wallMs', limit: 60 })
      expect(performance.now() - began).to.be.at.least(55) // it really went on past the first deadline
    })

    it('a handler is removed with the plugin that added it', async () => {
      let calls = 0
      const fork = ctx.plugin({ name: 'operator', inject: ['agents'], apply: (c: Context) => { c.agents.onBudget(() => { calls++ }) } })
      await ctx.lifecycle.flush()
      await agentWith(alwaysCalls(), { budget: { maxSteps: 1 } }).run('go')
      expect(calls).to.equal(1)
      fork.dispose()
      await ctx.agents.create({ model: 'm', budget: { maxSteps: 1 } }).run('go')
      expect(calls).to.equal(1)
    })
  })

  describe('onSpend: a root run reports its tree\'s spend as it goes', () => {
    it('is called after each charge with cumulative steps, tokens and tool calls, and not after the run ended', async () => {
      const agent = agentWith(alwaysCalls(2, 5), { budget: { maxSteps: 3 } })
      const seen: Array<{ steps: number; tokens: number; toolCalls: number }> = []
      const result = await agent.run('go', { onSpend: (spent) => seen.push({ steps: spent.steps, tokens: spent.tokens, toolCalls: spent.toolCalls }) })
      expect(result.stopReason).to.equal('budget')
      expect(seen.length).to.be.greaterThan(3)
      const last = seen[seen.length - 1]
      expect(last).to.deep.equal({ steps: 3, tokens: 15, toolCalls: result.toolCalls })
      // Cumulative: never going down.
      for (let i = 1; i < seen.length; i++) expect(seen[i].steps).to.be.at.least(seen[i - 1].steps)
      const before = seen.length
      await agent.run('again')
      expect(seen.length).to.equal(before)
    })

    it('a listener that throws breaks nothing: the turn runs to its stop, its tool calls answered, and the agent runs again', async () => {
      let step = 0
      const model = new ScriptedModel(() => (++step === 1 ? { toolCalls: [{ name: 'echo', input: { text: 'a' } }] } : { text: 'done' }))
      const agent = agentWith(model, { budget: { maxSteps: 5, maxWallMs: 60_000 } })
      let calls = 0
      const result = await agent.run('go', { onSpend: () => { calls++; throw new Error('the sink closed') } })
      expect(result.stopReason).to.equal('completed')
      expect(result.text).to.equal('done')
      expect(calls, 'called at every charge all the same').to.be.greaterThan(2)
      expect(isBalanced(agent.transcript.messages), 'the tool call was answered').to.equal(true)
      step = 1
      expect((await agent.run('again')).stopReason).to.equal('completed')
      await agent.dispose()
    })

    it('must be a function', async () => {
      const agent = agentWith(alwaysCalls())
      const error = await agent.run('go', { onSpend: 7 as never }).then(() => undefined, (caught: unknown) => caught)
      expect(error).to.have.property('code', 'INVALID_OPTIONS')
      expect((error as Error).message).to.match(/onSpend must be a function/)
    })
  })

  describe('root limits from config and from a parent host', () => {
    it('the runtime config budget applies to root runs; create() can lower it, never raise it', async () => {
      await ctx.stop()
      ;({ ctx } = await setup({ budget: { maxSteps: 2 } }))
      ctx.plugin(toolPlugin(makeTool('echo', { execute: async () => ({ content: 'e' }) })))
      await ctx.lifecycle.flush()
      const model = alwaysCalls()
      ctx.agents.registerModel('m', model)
      expect((await ctx.agents.create({ model: 'm', budget: { maxSteps: 50 } }).run('go')).budget)
        .to.deep.equal({ budget: 'steps', limit: 2, spent: 2 })
      expect((await ctx.agents.create({ model: 'm', budget: { maxSteps: 1 } }).run('go')).budget)
        .to.deep.equal({ budget: 'steps', limit: 1, spent: 1 })
    })

    it('SUBAGENT_BUDGET and SUBAGENT_MAX_DEPTH (set by a parent host over ACP) lower the root limits; malformed ones are ignored with a warning', async () => {
      const saved = { budget: process.env.SUBAGENT_BUDGET, depth: process.env.SUBAGENT_MAX_DEPTH }
      try {
        process.env.SUBAGENT_BUDGET = JSON.stringify({ maxSteps: 7, maxChildren: 2 })
        process.env.SUBAGENT_MAX_DEPTH = '4'
        const first = await setup({ budget: { maxSteps: 9, maxTokens: 100 } })
        expect(first.ctx.agents.rootLimits).to.deep.equal({ maxSteps: 7, maxTokens: 100, maxChildren: 2, maxDepth: 4 })
        await first.ctx.stop()
        process.env.SUBAGENT_BUDGET = '{"maxSteps": -1}'
        const second = await setup({ budget: { maxSteps: 9 } })
        // Only the malformed variable is dropped: the well-formed depth ceiling still holds.
        expect(second.ctx.agents.rootLimits).to.deep.equal({ maxSteps: 9, maxDepth: 4 })
        await second.ctx.stop()
      } finally {
        for (const [key, value] of [['SUBAGENT_BUDGET', saved.budget], ['SUBAGENT_MAX_DEPTH', saved.depth]] as const) {
          if (value === undefined) delete process.env[key]
          else process.env[key] = value
        }
      }
    })

    it('SUBAGENT_ALLOWED_TOOLS (a parent host\'s tool ceiling over ACP), once its nonce binds it, restricts every root agent, even one given a view', async () => {
      const saved = { tools: process.env.SUBAGENT_ALLOWED_TOOLS, for: process.env.SUBAGENT_CROSSING_FOR }
      try {
        process.env.SUBAGENT_ALLOWED_TOOLS = 'echo,not a name,missing'
        process.env.SUBAGENT_CROSSING_FOR = 'the-nonce-of-this-child'
        const child = await setup()
        child.ctx.plugin(toolPlugin(makeTool('echo', {}), makeTool('secret', {})))
        await child.ctx.lifecycle.flush()
        // Unbound (a process the environment reached two hops away): no ceiling. A wrong nonce binds nothing.
        expect(child.ctx.agents.rootCeiling).to.equal(undefined)
        expect(child.ctx.agents.create().tools.has('secret')).to.equal(true)
        expect(child.ctx.agents.bindCrossing('another-nonce-entirely')).to.equal(false)
        expect(child.ctx.agents.rootCeiling).to.equal(undefined)
        expect(child.ctx.agents.bindCrossing('the-nonce-of-this-child')).to.equal(true)
        expect(child.ctx.agents.rootCeiling).to.deep.equal(['echo', 'missing'])
        expect(child.ctx.agents.create().tools.list().map((t) => t.name)).to.deep.equal(['echo'])
        expect(child.ctx.agents.create({ tools: child.ctx.tools.view() }).tools.has('secret')).to.equal(false)
        // The agent's own tools (a serving host's: not the parent's) are added after the ceiling; the ceiling still bounds the rest.
        const owning = child.ctx.agents.create({ tools: child.ctx.tools.view(), ownTools: [makeTool('mine', {})] })
        expect(owning.tools.list().map((t) => t.name).sort()).to.deep.equal(['echo', 'mine'])
        const result = await child.ctx.agents.create().tools.execute({ name: 'secret', input: { text: 'x' } }, {
          signal: new AbortController().signal, agent: { id: 'a', depth: 0 }, toolCallId: 'c',
        })
        expect(result.isError).to.equal(true)
        process.env.SUBAGENT_ALLOWED_TOOLS = ''
        const none = await setup()
        none.ctx.plugin(toolPlugin(makeTool('echo', {})))
        await none.ctx.lifecycle.flush()
        none.ctx.agents.bindCrossing('the-nonce-of-this-child')
        expect(none.ctx.agents.create().tools.list()).to.deep.equal([]) // the parent could use no tool
        expect(none.ctx.agents.create({ ownTools: [makeTool('mine', {})] }).tools.list().map((t) => t.name)).to.deep.equal(['mine'])
        // A parent older than the nonce: the variable alone is never applied (a session's `_meta` ceiling still is).
        delete process.env.SUBAGENT_CROSSING_FOR
        process.env.SUBAGENT_ALLOWED_TOOLS = 'echo'
        const old = await setup()
        old.ctx.plugin(toolPlugin(makeTool('echo', {}), makeTool('secret', {})))
        await old.ctx.lifecycle.flush()
        expect(old.ctx.agents.bindCrossing(undefined)).to.equal(false)
        expect(old.ctx.agents.create().tools.has('secret')).to.equal(true)
        await Promise.all([child.ctx.stop(), none.ctx.stop(), old.ctx.stop()])
      } finally {
        for (const [name, value] of [['SUBAGENT_ALLOWED_TOOLS', saved.tools], ['SUBAGENT_CROSSING_FOR', saved.for]] as const) {
          if (value === undefined) delete process.env[name]
          else process.env[name] = value
        }
      }
    })

    it('a malformed budget is refused at create()', () => {
      ctx.agents.registerModel('m', alwaysCalls())
      expect(() => ctx.agents.create({ budget: { maxSteps: -1 } })).to.throw(/maxSteps must be a non-negative integer/)
      expect(() => ctx.agents.create({ budget: { maxStep: 3 } as never })).to.throw(/unknown key "maxStep"/)
    })
  })
})

describe('abortFlat: a cascade of aborts never grows the stack with its depth', () => {
  it('aborts a 50,000-long chain of controllers, each aborting the next from its listener, synchronously', () => {
    const controllers = Array.from({ length: 50_000 }, () => new AbortController())
    controllers.forEach((controller, i) => {
      const next = controllers[i + 1]
      if (next) controller.signal.addEventListener('abort', () => abortFlat(next, controller.signal.reason), { once: true })
    })
    abortFlat(controllers[0], 'stop')
    expect(controllers.every((c) => c.signal.aborted && c.signal.reason === 'stop')).to.equal(true)
  })

  it('the same chain with plain abort() overflows the stack (what abortFlat prevents)', () => {
    const controllers = Array.from({ length: 50_000 }, () => new AbortController())
    const errors: unknown[] = []
    controllers.forEach((controller, i) => {
      const next = controllers[i + 1]
      if (next) {
        controller.signal.addEventListener('abort', () => {
          try {
            next.abort('stop')
          } catch (error) {
            errors.push(error)
          }
        }, { once: true })
      }
    })
    controllers[0].abort('stop')
    expect(errors.some((error) => error instanceof RangeError)).to.equal(true)
    expect(controllers.every((c) => c.signal.aborted)).to.equal(false)
  })
})
