// The host's verbs on live spawn children, by run id: interrupt, wake, close, resume, and the
// provider's restore of a closed child from its checkpoint.
import { expect } from 'chai'
import { z } from 'zod'
import { type GenerateRequest, type Message, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import type { JournalledRun, ProviderStartRequest, RunJournal, SubagentHandle } from '@cordis-subagents/subagents-service'
import { startHost, type Host } from './support/host.js'
import { until } from './support/async.js'

const said = (request: GenerateRequest, text: string) =>
  request.messages.some((message: Message) => message.role === 'user' && String(message.content).includes(text))
const hasTool = (request: GenerateRequest) => request.messages.some((message: Message) => message.role === 'tool')

async function rejection(promise: Promise<unknown>): Promise<any> {
  return promise.then(() => { throw new Error('expected a rejection') }, (error) => error)
}

describe('host verbs over spawn children: interrupt, wake, close, resume, restore', () => {
  let host: Host
  let run: SubagentHandle | undefined

  beforeEach(async () => { host = await startHost() })
  afterEach(async () => {
    await run?.dispose()
    run = undefined
    await host?.stop()
  })

  const delegate = (prompt: string) => host.ctx.subagents.delegate('spawn', {
    prompt, parent: host.ctx.agents.create({ label: 'host' }), signal: new AbortController().signal, agentOptions: { model: 'child' },
  })

  it('interrupt ends the child\'s turn interrupted (it keeps its transcript); a message and wake run its next turn', async () => {
    const { ctx } = host
    let waiting = 0
    ctx.tools.register({
      name: 'watch', description: 'waits until stopped', input: z.strictObject({}),
      execute: (_input, exec) => new Promise((resolve) => {
        waiting++
        exec.signal.addEventListener('abort', () => resolve({ content: 'stopped' }), { once: true })
      }),
    })
    const child = new ScriptedModel((request) => said(request, 'Now finish.')
      ? { text: 'Finished after the interrupt.' }
      : { toolCalls: [{ name: 'watch', input: {} }] })
    ctx.agents.registerModel('child', child)
    ctx.plugin(Spawn as never, { name: 'spawn' })
    await ctx.lifecycle.flush()
    run = await delegate('Watch the logs.')
    await until(() => waiting === 1, 'the child waits in its tool')
    const interrupted = await ctx.subagents.interrupt(run.id)
    expect(interrupted.stopReason).to.equal('interrupted')
    expect(run.state).to.equal('interrupted')
    // Nothing in its inbox: a wake leaves it interrupted and says why.
    const empty = await ctx.subagents.wake(run.id)
    expect(empty.stopReason).to.equal('interrupted')
    expect(empty.diagnostic).to.match(/Nothing waits in its inbox to wake on/)
    expect(await rejection(ctx.subagents.interrupt(run.id))).to.have.property('code', 'NOT_RUNNING')
    run.send('Now finish.')
    const woken = await ctx.subagents.wake(run.id)
    expect(woken).to.include({ stopReason: 'completed', output: 'Finished after the interrupt.' })
    // The woken turn still had the first turn in its transcript.
    expect(said(child.requests.at(-1)!, 'Watch the logs.')).to.equal(true)
    expect(woken.work.steps).to.equal(2)
  })

  it('close ends a parked child closed with its checkpoint; the provider\'s restore brings it back parked, and resume finishes it', async () => {
    const { ctx } = host
    const child = new ScriptedModel((request) => hasTool(request)
      ? { text: `Booked for ${String((request.messages.filter((m) => m.role === 'tool').at(-1) as { content: unknown }).content)}.` }
      : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which date?' } }] })
    ctx.agents.registerModel('child', child)
    ctx.plugin(Spawn as never, { name: 'spawn', askParent: true })
    await ctx.lifecycle.flush()
    const kept: { run: JournalledRun; checkpoint: unknown }[] = []
    const journal: RunJournal = {
      started() {}, parked() {}, resumed() {},
      settled: (journalled) => { kept.push({ run: journalled, checkpoint: journalled.checkpoint() }) },
    }
    ctx.subagents.useJournal(journal)
    run = await delegate('Book the venue.')
    const first = await run.result
    expect(first.question).to.include({ text: 'Which date?' })
    // A parked run takes no follow-ups, and no answer before it is asked for.
    expect(() => run!.send('hurry')).to.throw().with.property('code', 'NOT_RUNNING')
    expect(await rejection(ctx.subagents.resume(run.id, ''))).to.have.property('code', 'INVALID_REQUEST')
    const closed = await ctx.subagents.close(run.id)
    expect(closed.stopReason).to.equal('closed')
    expect(await rejection(ctx.subagents.resume(run.id, 'Friday'))).to.have.property('code', 'NOT_PARKED')
    await run.dispose()
    expect(await rejection(ctx.subagents.resume(run.id, 'Friday'))).to.have.property('code', 'NOT_FOUND')
    expect(kept).to.have.length(1)
    const checkpoint = kept[0].checkpoint as { parked?: unknown }
    expect(checkpoint).to.have.property('parked')

    const provider = ctx.subagents.get('spawn')!
    const parent = ctx.agents.create({ label: 'host again' })
    const request: ProviderStartRequest = {
      prompt: 'Book the venue.', parent, signal: new AbortController().signal, runId: 'run-restored', depth: 1, onUpdate: () => {},
    }
    const record = { runId: run.id, provider: 'spawn', parentId: parent.id, depth: 1, state: 'closed' as const, checkpoint }
    const restored = await provider.restore!(record, request)
    const again = await restored.result
    expect(again.stopReason).to.equal('pending')
    expect(again.question).to.include({ text: 'Which date?' })
    const done = await restored.resume!('Friday')
    expect(done).to.include({ stopReason: 'completed', output: 'Booked for Friday.' })
    expect(child.callCount).to.equal(2)
    await restored.dispose()
  })
})
