/// <reference types="mocha" />
import { expect } from 'chai'
import type { GenerateResponse } from '@cordis-subagents/agent'
import { createInProcessProvider } from '@cordis-subagents/provider-spawn'
import { signalsMadeDuring } from '@cordis-subagents/test-support'
import { deferred, type Harness, setup } from './helpers.js'

/** The service hands an in-process child the run's abort as a scope: no AbortSignal is made for the run unless read. */
describe('in-process provider: the run\'s abort scope', () => {
  let h: Harness
  let reached: ReturnType<typeof deferred<void>>
  let answer: ReturnType<typeof deferred<GenerateResponse>>

  beforeEach(async () => {
    h = await setup({ models: { m: { generate: async () => ({ text: 'parent', toolCalls: [], finishReason: 'stop' }) } } })
    h.ctx.agents.registerModel('child', {
      generate: () => {
        reached.resolve()
        return answer.promise
      },
    })
    h.ctx.subagents.register(createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false }))
    reached = deferred<void>()
    answer = deferred<GenerateResponse>()
  })
  afterEach(async () => { await h.ctx.stop() })

  it('a delegation whose child reads no signal makes none for the run, the caller\'s signal aside', async () => {
    const parent = h.ctx.agents.create({ model: 'child' })
    const caller = new AbortController().signal
    const made = await signalsMadeDuring(async () => {
      const run = await h.ctx.subagents.delegate('spawn', { prompt: 'work', parent, signal: caller })
      await reached.promise
      answer.resolve({ text: 'done', toolCalls: [], finishReason: 'stop' })
      expect((await run.result).output).to.equal('done')
      await run.dispose()
    })
    expect(made).to.equal(0)
    await parent.dispose()
  })

  it('a cancel reaches the child through the scope: it ends aborted with the reason, and a signal read late is aborted too', async () => {
    const parent = h.ctx.agents.create({ model: 'child' })
    let request: { signal: AbortSignal } | undefined
    const provider = createInProcessProvider(h.ctx, { name: 'spy', inheritsParentContext: false })
    h.ctx.subagents.register({ ...provider, start: (given) => { request = given; return provider.start(given) } })
    const run = await h.ctx.subagents.delegate('spy', { prompt: 'work', parent, signal: new AbortController().signal })
    await reached.promise
    run.cancel('no longer needed')
    const outcome = await run.result
    expect(outcome.stopReason).to.equal('aborted')
    expect(outcome.diagnostic).to.include('no longer needed')
    expect(request!.signal.aborted).to.equal(true)
    answer.resolve({ text: 'late', toolCalls: [], finishReason: 'stop' })
    await run.dispose()
    await parent.dispose()
  })
})
