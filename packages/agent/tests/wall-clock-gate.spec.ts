/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { eventually, within, withSteppedClock } from '@cordis-subagents/test-support'
import { type ChatModel, type GenerateRequest, type GenerateResponse, RateLimitedError } from '@cordis-subagents/agent'
import { setup } from './helpers.js'

// The model gate's pause after a 429/503 is a duration of this process: a step of the OS clock (NTP, a VM resumed,
// `date -s`) neither ends it early nor stretches it past `rateLimit.maxWaitMs`. `withSteppedClock` moves Date.now() only.

const HOUR = 3_600_000
const KEY = 'stepped-endpoint'

/** Refuses the first attempt with Retry-After `retryAfterMs`, answers every later one. */
class Endpoint implements ChatModel {
  readonly began: string[] = []
  /** Called in the next macrotask after the refusal: by then the gate has paused the endpoint and queued the call. */
  afterRefusal?: () => void
  constructor(private readonly retryAfterMs: number) {}
  rateLimitKey(): string { return KEY }
  async generate(request: GenerateRequest): Promise<GenerateResponse> {
    this.began.push(request.messages.find((m) => m.role === 'user')!.content)
    if (this.began.length === 1) {
      if (this.afterRefusal) setTimeout(this.afterRefusal, 0)
      throw new RateLimitedError('RATE_LIMITED', 'HTTP 429', { endpoint: 'the test endpoint', status: 429, retryAfterMs: this.retryAfterMs })
    }
    return { text: 'ok', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 1, outputTokens: 1 } }
  }
}

describe('the model gate\'s pause when the wall clock steps', () => {
  let ctx: Context

  afterEach(async () => {
    await ctx.stop()
  })

  async function gated(retryAfterMs: number, maxWaitMs: number) {
    ({ ctx } = await setup({ rateLimit: { maxJitterMs: 0, maxWaitMs } }))
    const model = new Endpoint(retryAfterMs)
    ctx.agents.registerModel('m', model)
    const run = (prompt: string, signal?: AbortSignal) => ctx.agents.create({ model: 'm' }).run(prompt, { signal })
    const paused = () => eventually(() => ctx.agents.modelGate!.endpoint(KEY)?.waiting === 1, 'the refused call waits out its pause')
    return { model, run, paused }
  }

  it('a backward step does not stretch a pause: the retry comes when it ends, well within maxWaitMs', async () => {
    const { model, run } = await gated(50, 60_000)
    await withSteppedClock(async (step) => {
      let waiting: number | undefined
      model.afterRefusal = () => {
        waiting = ctx.agents.modelGate!.endpoint(KEY)?.waiting
        step(-HOUR)
      }
      const done = run('a')
      const result = await within(done, 10_000, 'the retried call')
      expect(result.stopReason).to.equal('completed')
      expect(result.usage.rateLimitWaitMs).to.be.within(50, 10_000)
      expect(model.began).to.deep.equal(['a', 'a'])
      expect(waiting).to.equal(1) // the clock stepped while the refused call waited out its pause
    })
  })

  it('a forward step does not end a pause early: neither the refused call nor a new one is sent', async () => {
    const { model, run, paused } = await gated(60_000, 300_000)
    const controller = new AbortController()
    await withSteppedClock(async (step) => {
      const runs = [run('a', controller.signal)]
      await paused()
      step(HOUR)
      runs.push(run('b', controller.signal))
      await eventually(() => ctx.agents.modelGate!.endpoint(KEY)?.waiting === 2 || model.began.length > 1, 'the new call queued')
      // The point is that nothing is sent within a window: a short one (the pause is 60 s).
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(model.began).to.deep.equal(['a'])
      expect(ctx.agents.modelGate!.endpoint(KEY)!.pausedMs).to.be.above(50_000)
      controller.abort()
      expect((await Promise.all(runs)).map((r) => r.stopReason)).to.deep.equal(['aborted', 'aborted'])
    })
  })
})
