/// <reference types="mocha" />
// Concurrent in-process children under one shared budget: steps and tool calls are reserved
// before they are spent, so however the children interleave, the tree spends exactly its limit.
import { expect } from 'chai'
import { z } from 'zod'
import * as Spawn from '@cordis-subagents/provider-spawn'
import type { Tool } from '@cordis-subagents/tools'
import { type Harness, delegation, routed, setup, loadTool, tick } from './helpers.js'

const CHILDREN = 6

describe('provider-spawn: concurrent children under a shared budget', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  /** Counts model calls in flight at once, so the test knows the children really overlapped. */
  function overlapMeter() {
    const meter = { inFlight: 0, most: 0 }
    const enter = async <T>(answer: T): Promise<T> => {
      meter.inFlight++
      meter.most = Math.max(meter.most, meter.inFlight)
      try {
        await tick(3) // yields to the other children's calls before answering
        return answer
      } finally {
        meter.inFlight--
      }
    }
    return { meter, enter }
  }

  function rootWithChildren(perStep: number, enter: <T>(answer: T) => Promise<T>) {
    return routed({
      'root task': ({ step }) => step === 0
        ? { toolCalls: Array.from({ length: CHILDREN }, (_, i) => delegation(`worker ${i}`, { id: `w${i}` })) }
        : { text: 'root done' },
    }, () => enter({ toolCalls: Array.from({ length: perStep }, () => ({ name: 'work', input: {} })) }))
  }

  function workTool(ran: { count: number }): Tool<z.ZodObject> {
    return {
      name: 'work',
      description: 'Does a unit of work.',
      input: z.object({}),
      execute: async () => {
        ran.count++
        await tick(2)
        return { content: 'worked' }
      },
    }
  }

  it('maxSteps: six children calling the model at once spend exactly the root\'s maxSteps, never one more', async () => {
    const { meter, enter } = overlapMeter()
    const model = rootWithChildren(1, enter)
    const ran = { count: 0 }
    h = await setup({ models: { main: model }, tools: [workTool(ran)] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    const root = h.ctx.agents.create({ budget: { maxSteps: 20 } })
    const result = await root.run('root task')

    expect(meter.most, 'the children\'s model calls overlapped').to.be.greaterThan(1)
    expect(model.requests).to.have.length(20) // the root's first step and 19 by the children
    expect(root.budget.spent.steps).to.equal(20)
    expect(result.stopReason).to.equal('budget') // no step left for the root's answer
    expect(h.ends.map((end) => end.result.stopReason)).to.deep.equal(Array(CHILDREN).fill('budget'))
    expect(h.ends.reduce((sum, end) => sum + end.result.work!.steps, 0)).to.equal(19)
  })

  it('maxToolCalls: six children asking for three tools a step run exactly the root\'s maxToolCalls, never one more', async () => {
    const { meter, enter } = overlapMeter()
    const model = rootWithChildren(3, enter)
    const ran = { count: 0 }
    h = await setup({ models: { main: model }, tools: [workTool(ran)] })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()

    // The six delegations count as tool calls of the root: 40 - 6 = 34 are left for the children.
    const root = h.ctx.agents.create({ budget: { maxToolCalls: 40 } })
    await root.run('root task')

    expect(meter.most, 'the children\'s model calls overlapped').to.be.greaterThan(1)
    expect(ran.count).to.equal(34)
    expect(root.budget.spent.toolCalls).to.equal(40)
    expect(h.ends.map((end) => end.result.stopReason)).to.deep.equal(Array(CHILDREN).fill('budget'))
    expect(h.ends.reduce((sum, end) => sum + end.result.work!.toolCalls, 0)).to.equal(34)
  })
})
