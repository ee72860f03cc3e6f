/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { treeCrossing } from '@cordis-subagents/shared'
import { eventually, within, withSteppedClock } from '@cordis-subagents/test-support'
import { type Agent, askParentTool, Budget, budgetNote, type ChatModel, ScriptedModel, WRAP_UP_HINT } from '@cordis-subagents/agent'
import { echo, setup, toolPlugin } from './helpers.js'

// A budget's wall time (`maxWallMs`) is a duration of this process: a step of the OS clock (NTP, a VM resumed,
// `date -s`) neither spends it nor gives it back. `withSteppedClock` moves Date.now() only.

const HOUR = 3_600_000
const TEN_MINUTES = 600_000

describe('a budget\'s wall time when the wall clock steps', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
    ctx.plugin(toolPlugin(echo, askParentTool()))
    await ctx.lifecycle.flush()
  })

  afterEach(async () => {
    await ctx.stop()
  })

  it('a forward step does not spend it: the run goes on to its answer', async () => {
    await withSteppedClock(async (step) => {
      let calls = 0
      ctx.agents.registerModel('m', new ScriptedModel(() => {
        if (++calls === 1) step(HOUR)
        return calls < 3 ? { toolCalls: [{ name: 'echo', input: { text: 'x' } }] } : { text: 'done' }
      }))
      const result = await ctx.agents.create({ model: 'm', budget: { maxWallMs: TEN_MINUTES } }).run('go')
      expect(result).to.include({ stopReason: 'completed', text: 'done', steps: 3 })
    })
  })

  it('a backward step does not put the deadline off: the wall-time timer still stops a hanging call', async () => {
    await withSteppedClock(async (step) => {
      const hang: ChatModel = {
        generate: (request) => new Promise((_, reject) => {
          step(-HOUR) // after the run armed its timer
          request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
        }),
      }
      ctx.agents.registerModel('m', hang)
      const result = await within(ctx.agents.create({ model: 'm', budget: { maxWallMs: 50 } }).run('go'), 10_000, 'the run')
      expect(result.stopReason).to.equal('budget')
      expect(result.budget).to.include({ budget: 'wallMs', limit: 50 })
      expect(result.budget!.spent).to.be.within(50, 10_000)
    })
  })

  /** Resumes `agent`, parked, after a forward step and a short real wait: its deadline moves by the real wait only. */
  async function resumeAfterStep(agent: Agent) {
    const before = agent.budget.deadline
    let moved = 0
    await withSteppedClock(async (step) => {
      step(HOUR)
      await new Promise((resolve) => setTimeout(resolve, 20))
      const resumed = agent.resume('yes', { onEvent: (event) => { if (event.type === 'resumed') moved = agent.budget.deadline - before } })
      expect((await resumed).stopReason).to.equal('completed')
    })
    expect(moved).to.be.within(19, HOUR - 1) // 20 ms, less a timer's rounding, and not the step
    expect(agent.budget.remaining().maxWallMs).to.be.within(1, TEN_MINUTES)
  }

  it('a forward step while the turn is parked is not added to the budget; the time really parked is', async () => {
    ctx.agents.registerModel('m', new ScriptedModel([{ toolCalls: [{ name: 'ask_parent', input: { question: 'wait?' } }] }, { text: 'ok' }]))
    const agent = ctx.agents.create({ model: 'm', budget: { maxWallMs: TEN_MINUTES } })
    expect((await agent.run('go')).stopReason).to.equal('pending')
    await resumeAfterStep(agent)
  })

  it('the same for a turn restored parked from a checkpoint (its parked time runs from the restore)', async () => {
    ctx.agents.registerModel('m', new ScriptedModel([{ toolCalls: [{ name: 'ask_parent', input: { question: 'wait?' } }] }, { text: 'ok' }]))
    const agent = ctx.agents.create({ model: 'm', budget: { maxWallMs: TEN_MINUTES } })
    expect((await agent.run('go')).stopReason).to.equal('pending')
    const checkpoint = JSON.parse(JSON.stringify(agent.checkpoint()))
    await agent.dispose()
    await resumeAfterStep(ctx.agents.create({ restore: checkpoint, budget: { maxWallMs: TEN_MINUTES } }))
  })
})

describe('a Budget when the wall clock steps', () => {
  it('what is left (a child\'s carve, the crossing, the budget note) counts from the monotonic clock', async () => {
    const root = Budget.root({ maxWallMs: TEN_MINUTES })
    await withSteppedClock((step) => {
      for (const by of [HOUR, -2 * HOUR]) {
        step(by)
        expect(root.overtime()).to.equal(undefined)
        expect(root.remaining().maxWallMs).to.be.within(TEN_MINUTES - 60_000, TEN_MINUTES)
        expect(root.child().limits.maxWallMs).to.be.within(TEN_MINUTES - 60_000, TEN_MINUTES)
        expect(treeCrossing({ depth: 1, budget: root }).budget!.maxWallMs).to.be.within(TEN_MINUTES - 60_000, TEN_MINUTES)
        const note = budgetNote(10, root, 1)
        expect(note).to.match(/, (59\d|600) s of time\./)
        expect(note).to.not.include(WRAP_UP_HINT)
      }
    })
  })

  it('an extension of a passed deadline holds after a backward step', async () => {
    const root = Budget.root({ maxWallMs: 1 })
    const breach = await eventually(() => root.overtime(), 'the deadline passed')
    await withSteppedClock((step) => {
      step(-HOUR)
      root.extend(breach, TEN_MINUTES)
    })
    expect(root.overtime()).to.equal(undefined)
    expect(root.limits.maxWallMs).to.equal(1 + TEN_MINUTES)
  })
})
