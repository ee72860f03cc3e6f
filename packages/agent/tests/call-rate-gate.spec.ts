/// <reference types="mocha" />
// The model gate's call rate (`maxModelCallsPerSecond`): calls to one endpoint start at least 1/rate s apart, in
// arrival order, and after a 429/503 pause the waiting calls leave paced. Asserted by order, counts and states; a
// duration only as a lower bound between timestamps this test recorded (a loaded machine only makes it longer).
import { expect } from 'chai'
import type { Context } from 'cordis'
import { type ChatModel, type GenerateRequest, type GenerateResponse, RateLimitedError } from '@cordis-subagents/agent'
import { setup } from './helpers.js'
import { eventually } from '../../../test/support/async.js'

const DONE: GenerateResponse = { text: 'done', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 1, outputTokens: 1 } }

/** Answers every call at once, except that it refuses the first attempt of each prompt in `refuse` (Retry-After `retryAfterMs`). */
class Endpoint implements ChatModel {
  readonly began: string[] = []
  /** performance.now() as each attempt began. */
  readonly at: number[] = []
  readonly refusedAt: number[] = []

  constructor(private readonly refuse: Set<string> = new Set(), private readonly retryAfterMs = 0) {}

  rateLimitKey(): string {
    return 'paced-endpoint'
  }

  async generate(request: GenerateRequest): Promise<GenerateResponse> {
    const prompt = request.messages.find((m) => m.role === 'user')!.content
    this.began.push(prompt)
    this.at.push(performance.now())
    if (this.refuse.delete(prompt)) {
      this.refusedAt.push(performance.now())
      throw new RateLimitedError('RATE_LIMITED', 'HTTP 429', { endpoint: 'the test endpoint', status: 429, retryAfterMs: this.retryAfterMs })
    }
    return DONE
  }
}

describe('the model gate\'s call rate (maxModelCallsPerSecond)', () => {
  let ctx: Context | undefined
  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
  })

  async function runtime(perSecond: number, model: ChatModel, rateLimit: Record<string, unknown> = {}) {
    ;({ ctx } = await setup({ maxModelCallsPerSecond: perSecond, rateLimit: { maxJitterMs: 0, ...rateLimit } }))
    ctx.agents.registerModel('m', model)
    await ctx.lifecycle.flush()
    return ctx
  }
  const run = (c: Context, prompt: string, signal?: AbortSignal) => c.agents.create({ model: 'm' }).run(prompt, { signal })

  it('six calls at once start one at a time, in arrival order, at least 1/rate s apart', async () => {
    const model = new Endpoint()
    const c = await runtime(20, model)
    const prompts = ['a', 'b', 'c', 'd', 'e', 'f']
    const began = performance.now()
    const results = await Promise.all(prompts.map((p) => run(c, p)))
    expect(results.map((r) => r.stopReason)).to.deep.equal(prompts.map(() => 'completed'))
    expect(model.began).to.deep.equal(prompts)
    // Each start takes its token at least 50 ms after the one before: the last at least 5 × 50 ms after the test began them.
    expect(model.at.at(-1)! - began).to.be.at.least(5 * 50)
  })

  it('also with the shared backoff off (the rate is the gate\'s own, not the backoff\'s)', async () => {
    const model = new Endpoint()
    const c = await runtime(20, model, { enabled: false })
    const began = performance.now()
    await Promise.all(['a', 'b', 'c'].map((p) => run(c, p)))
    expect(model.began).to.deep.equal(['a', 'b', 'c'])
    expect(model.at.at(-1)! - began).to.be.at.least(2 * 50)
  })

  it('after a 429 pause the waiting calls leave paced, not all at once; every call completes', async () => {
    const model = new Endpoint(new Set(['a']), 80)
    const c = await runtime(20, model)
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((p) => run(c, p)))
    expect(results.map((r) => r.stopReason)).to.deep.equal(['completed', 'completed', 'completed', 'completed'])
    // 'a' was refused at its first attempt and retried first; b, c and d never reached the endpoint during the pause.
    expect(model.began[0]).to.equal('a')
    expect(model.began.slice(1)).to.have.members(['a', 'b', 'c', 'd'])
    expect(model.at.slice(1).every((at) => at >= model.refusedAt[0] + 80)).to.equal(true)
    // Four starts after the pause, each 50 ms after the one before: the last one at least 3 × 50 ms after the pause ended
    // (2 ms of slack).
    expect(model.at.at(-1)! - (model.refusedAt[0] + 80)).to.be.at.least(3 * 50 - 2)
  })

  it('a call that waits for its turn leaves the queue when aborted; the next one is not held up by it', async () => {
    const model = new Endpoint()
    const c = await runtime(2, model)
    expect((await run(c, 'first')).stopReason).to.equal('completed')
    const controller = new AbortController()
    const waiting = run(c, 'aborted', controller.signal)
    await eventually(() => c.agents.modelGate!.waitingForRate('paced-endpoint') === 1, 'the call waits for its turn')
    controller.abort(new Error('the user stopped it'))
    expect((await waiting).stopReason).to.equal('aborted')
    expect((await run(c, 'next')).stopReason).to.equal('completed')
    expect(model.began).to.deep.equal(['first', 'next'])
    expect(c.agents.modelGate!.waitingForRate('paced-endpoint')).to.equal(0)
  })
})
