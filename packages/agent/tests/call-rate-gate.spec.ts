/// <reference types="mocha" />
// The model gate's call rate (`maxModelCallsPerSecond`): calls to one endpoint start at least 1/rate s apart, in
// arrival order, and after a 429/503 pause the waiting calls leave paced. Asserted by order, counts and states; a
// duration only as a lower bound between timestamps this test recorded (a loaded machine only makes it longer).
import { expect } from 'chai'
import type { Context } from 'cordis'
import {
  type ChatModel, type EndpointStatus, type GenerateRequest, type GenerateResponse, RateLimitedError,
} from '@cordis-subagents/agent'
import { setup } from './helpers.js'
import { eventually } from '../../../test/support/async.js'

const DONE: GenerateResponse = { text: 'done', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 1, outputTokens: 1 } }

/** Answers every call at once, except that it refuses the first attempt of each prompt in `refuse` (Retry-After `retryAfterMs`). */
class Endpoint implements ChatModel {
  readonly began: string[] = []
  /** performance.now() as each attempt began. */
  readonly at: number[] = []
  readonly refusedAt: number[] = []
  /** The gate's state of this endpoint as each attempt began, once `status` is set (undefined: it holds none). */
  readonly statusAt: Array<EndpointStatus | undefined> = []
  status?: () => EndpointStatus | undefined

  constructor(private readonly refuse: Set<string> = new Set(), private readonly retryAfterMs = 0) {}

  rateLimitKey(): string {
    return 'paced-endpoint'
  }

  async generate(request: GenerateRequest): Promise<GenerateResponse> {
    const prompt = request.messages.find((m) => m.role === 'user')!.content
    this.began.push(prompt)
    this.at.push(performance.now())
    if (this.status) this.statusAt.push(this.status())
    if (this.refuse.delete(prompt)) {
      this.refusedAt.push(performance.now())
      const info = { endpoint: 'the test endpoint', status: 429, retryAfterMs: this.retryAfterMs }
      throw new RateLimitedError('RATE_LIMITED', 'HTTP 429', info)
    }
    return DONE
  }
}

/** Its second `rateLimitKey()` (the second call reaching the gate) keeps the event loop busy for `busyMs` first. */
class BusyEndpoint extends Endpoint {
  private keys = 0
  /** Attempts begun as that busy work began. */
  begunAtBusy?: number

  constructor(private readonly busyMs: number) {
    super()
  }

  override rateLimitKey(): string {
    if (++this.keys === 2) {
      this.begunAtBusy = this.began.length
      const until = performance.now() + this.busyMs
      while (performance.now() < until) { /* a busy event loop */ }
    }
    return super.rateLimitKey()
  }
}

/**
 * Starts `body` and looks at `read()` and performance.now() before it, then in macrotask after macrotask (a 1 ms timer apart)
 * until it settles. A look never falls between a call's token and its start (the gate does both in one go): an attempt not
 * begun at a look takes its token after it.
 */
async function watch<T, R>(body: () => Promise<R>, read: () => T): Promise<{ result: R; seen: Array<{ at: number; value: T }> }> {
  const seen = [{ at: performance.now(), value: read() }]
  const done = body()
  let settled = false
  done.then(() => { settled = true }, () => { settled = true })
  while (!settled) {
    seen.push({ at: performance.now(), value: read() })
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  return { result: await done, seen }
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

  for (const enabled of [true, false]) {
    it(`a call takes its token and starts in one go: the next call's work between them does not send the two together${
      enabled ? '' : ' (backoff off)'}`, async () => {
      const model = new BusyEndpoint(60)
      const c = await runtime(20, model, { enabled })
      await Promise.all(['a', 'b'].map((p) => run(c, p)))
      expect(model.began).to.deep.equal(['a', 'b'])
      // b reaches the gate right after a took its token, and keeps the event loop busy for 60 ms (past a's 50 ms gap): a began
      // before that, and b takes the next token after it.
      expect(model.at[1] - model.at[0], 'b began at least 1/rate s after a').to.be.at.least(50)
      expect(model.begunAtBusy, 'a began before b\'s busy work').to.equal(1)
    })
  }

  it('after a 429 pause the waiting calls leave paced, not all at once; every call completes', async () => {
    const model = new Endpoint(new Set(['a']), 80)
    const c = await runtime(20, model)
    model.status = () => c.agents.modelGate!.endpoint('paced-endpoint')
    const { result: results, seen } = await watch(() => Promise.all(['a', 'b', 'c', 'd'].map((p) => run(c, p))), () => model.began.length)
    expect(results.map((r) => r.stopReason)).to.deep.equal(['completed', 'completed', 'completed', 'completed'])
    expect(model.began[0]).to.equal('a')
    expect(model.began.slice(1)).to.have.members(['a', 'b', 'c', 'd'])
    // 'a' was refused at its first attempt and retried after the pause. No attempt began while the gate held the endpoint
    // paused, and none it let through knowing of the refusal began before the pause ended: b, c and d waited it out too
    // (one may have gone before the gate had the refusal, if the machine held the gate up past its turn in between).
    expect(model.statusAt.map((s) => s?.pausedMs ?? 0)).to.deep.equal([0, 0, 0, 0, 0])
    const pauseEnd = model.refusedAt[0] + 80
    expect(model.at[model.began.lastIndexOf('a')]).to.be.at.least(pauseEnd)
    for (let k = 1; k <= 4; k++) {
      if (model.statusAt[k]) expect(model.at[k], `${model.began[k]} began after the pause`).to.be.at.least(pauseEnd)
    }
    // Paced, not all at once: attempts i..4 took their tokens, 1/rate s apart, after the last look that saw attempt i not
    // begun, so attempt j began at least (j - i) × 50 ms after that look. Not counted from the pause's end: a call may take
    // its token just before the pause ends and, held up by a loaded machine before it checks the pause, start just after.
    const notBegun = (i: number) => seen.filter((s) => s.value <= i).at(-1)!.at
    for (let i = 0; i < 4; i++) {
      for (let j = i + 1; j <= 4; j++) {
        expect(model.at[j] - notBegun(i), `attempt ${j} after attempt ${i} was not begun`).to.be.at.least((j - i) * 50)
      }
    }
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
