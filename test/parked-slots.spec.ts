// Issue 38, item 6: parked in-process children keep their parent's slots (maxConcurrentPerParent),
// so a start that could only wait for answers is refused at once (PARKED_LIMIT) naming the parked
// runs; a start that waits for slots and is aborted (a timeout, a cancel) names what holds them:
// the parent's slots and the tree's. Real service, spawn provider and agents; ScriptedModel children.
import { expect } from 'chai'
import { z } from 'zod'
import { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import type { SubagentHandle } from '@cordis-subagents/subagents-service'
import { type Host, startHost } from './support/host.js'
import { until } from './support/async.js'

const hasTool = (request: GenerateRequest) => request.messages.some((message) => message.role === 'tool')
const firstPrompt = (request: GenerateRequest) => String(request.messages.find((message) => message.role === 'user')?.content ?? '')

async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  return promise.then(() => { throw new Error('expected a rejection') }, (error) => error)
}

describe('parked children and slots: refusals and slot waits name what holds the slots', function () {
  this.timeout(30_000)
  let host: Host
  const runs: SubagentHandle[] = []
  let blocked = 0
  let release: () => void = () => {}

  async function setup(subagents: Record<string, number> = {}) {
    host = await startHost({ subagents })
    const { ctx } = host
    const gate = new Promise<void>((resolve) => { release = resolve })
    blocked = 0
    ctx.tools.register({
      name: 'block', description: 'waits', input: z.strictObject({}),
      execute: async () => { blocked++; await gate; return { content: 'done' } },
    })
    // "ask ...": asks its parent and parks; "work ...": waits in a tool until released.
    ctx.agents.registerModel('child', new ScriptedModel((request) => {
      if (hasTool(request)) return { text: 'finished' }
      return firstPrompt(request).startsWith('ask')
        ? { toolCalls: [{ name: 'ask_parent', input: { question: `Question of ${firstPrompt(request)}?` } }] }
        : { toolCalls: [{ name: 'block', input: {} }] }
    }))
    ctx.plugin(Spawn as never, { name: 'spawn', askParent: true })
    await ctx.lifecycle.flush()
    return ctx.agents.create({ label: 'lead' })
  }

  const delegate = (parent: ReturnType<Host['ctx']['agents']['create']>, prompt: string, signal = new AbortController().signal) =>
    host.ctx.subagents.delegate('spawn', { prompt, label: prompt, parent, signal, agentOptions: { model: 'child' } })

  afterEach(async () => {
    release()
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await host.stop()
  })

  it('8 parked children hold all 8 slots: the 9th start is refused at once (PARKED_LIMIT), naming them; an answer frees a slot', async () => {
    const parent = await setup()
    for (let i = 1; i <= 8; i++) {
      const run = await delegate(parent, `ask ${i}`)
      runs.push(run)
      expect((await run.result).stopReason).to.equal('pending')
    }
    const error = await rejection(delegate(parent, 'ask 9'))
    expect(error.code).to.equal('PARKED_LIMIT')
    expect(error.message).to.include(`Agent "${parent.id}" cannot start another child now: all 8 of its slots (maxConcurrentPerParent)`)
    expect(error.message).to.include(`8 parked on a question (${runs[0].id} "ask 1", ${runs[1].id} "ask 2"`)
    expect(error.message).to.include('and 3 more)')
    expect(error.message).to.include('Answer one (subagent_reply, or ctx.subagents.resume(runId, answer)) or close it')

    // Answered and disposed, a child frees its slot: the next start goes through.
    expect((await runs[0].resume('blue')).stopReason).to.equal('completed')
    await runs.shift()!.dispose()
    const next = await delegate(parent, 'ask 9')
    runs.push(next)
    expect((await next.result).stopReason).to.equal('pending')
  })

  it('a start waiting for a slot held by running and parked children, aborted, names them (parent gate)', async () => {
    const parent = await setup({ maxConcurrentPerParent: 3 })
    runs.push(await delegate(parent, 'work 1'))
    for (const prompt of ['ask 2', 'ask 3']) {
      const run = await delegate(parent, prompt)
      runs.push(run)
      await run.result
    }
    await until(() => blocked === 1, 'the working child in its tool')
    const controller = new AbortController()
    const waiting = delegate(parent, 'ask 4', controller.signal)
    controller.abort()
    const error = await rejection(waiting)
    expect(error.code).to.equal('ABORTED')
    expect(error.message).to.include(`waiting for a slot of agent "${parent.id}" (all 3 of maxConcurrentPerParent held: `
      + `1 running (${runs[0].id} "work 1"), 2 parked on a question (${runs[1].id} "ask 2", ${runs[2].id} "ask 3"))`)
  })

  it('a start waiting for a tree slot, aborted, names the runs that hold the tree\'s slots', async () => {
    const parent = await setup({ maxConcurrent: 1 })
    runs.push(await delegate(parent, 'work 1'))
    await until(() => blocked === 1, 'the working child in its tool')
    const controller = new AbortController()
    const waiting = delegate(parent, 'work 2', controller.signal)
    controller.abort()
    const error = await rejection(waiting)
    expect(error.code).to.equal('ABORTED')
    expect(error.message).to.include(`waiting for a slot of its tree (all 1 of maxConcurrent held: 1 running (${runs[0].id} "work 1"))`)
  })

  it('every working slot of the tree held by parked children: refused at once (PARKED_LIMIT), naming them', async () => {
    const parent = await setup({ maxConcurrent: 2 })
    for (const prompt of ['ask 1', 'ask 2']) {
      const run = await delegate(parent, prompt)
      runs.push(run)
      expect((await run.result).stopReason).to.equal('pending')
    }
    const error = await rejection(delegate(parent, 'ask 3'))
    expect(error.code).to.equal('PARKED_LIMIT')
    expect(error.message).to.include('all 2 working slots of its tree (maxConcurrent) are held by runs that wait for an answer or a wake: '
      + `2 parked on a question (${runs[0].id} "ask 1", ${runs[1].id} "ask 2")`)
    // The refused start took no per-parent slot: once one child is answered and disposed, a start goes through.
    expect((await runs[0].resume('blue')).stopReason).to.equal('completed')
    await runs.shift()!.dispose()
    const next = await delegate(parent, 'ask 3')
    runs.push(next)
    expect((await next.result).stopReason).to.equal('pending')
  })
})
