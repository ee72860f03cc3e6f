/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { type AgentRuntime, type ChatModel, type GenerateRequest, type GenerateResponse, RateLimitedError } from '@cordis-subagents/agent'
import { MAX_TIMER_MS } from '@cordis-subagents/shared'
import { type Deferred, deferred, setup, tick } from './helpers.js'
import { eventually, isSettled } from '../../../test/support/async.js'

/** Polls until `check` holds (pauses run on real timers, kept short by config). */
const until = (check: () => boolean, what: string) => eventually(check, what, 10_000)

/**
 * A model whose calls the test answers or refuses for their rate (`RateLimitedError`, as an
 * adapter throws it when the gate asks it to). It logs every attempt and counts the calls in flight.
 */
class Endpoint implements ChatModel {
  inFlight = 0
  most = 0
  /** The prompt of each attempt, in the order they began. */
  readonly began: string[] = []
  /** The `rateLimits` flag of each attempt. */
  readonly flags: Array<string | undefined> = []
  /** performance.now() as each attempt began, and as each refusal was given (the gate's pauses run on it). */
  readonly beganAt: number[] = []
  readonly refusedAt: number[] = []
  private readonly pending: Array<{ prompt: string; answer: Deferred<GenerateResponse> }> = []

  constructor(private readonly key?: string) {}

  rateLimitKey(modelId: string | undefined): string {
    return this.key ?? `test-endpoint ${modelId ?? ''}`
  }

  generate(request: GenerateRequest): Promise<GenerateResponse> {
    const prompt = request.messages.find((m) => m.role === 'user')!.content
    this.inFlight++
    this.most = Math.max(this.most, this.inFlight)
    this.began.push(prompt)
    this.beganAt.push(performance.now())
    this.flags.push(request.rateLimits)
    const answer = deferred<GenerateResponse>()
    this.pending.push({ prompt, answer })
    return answer.promise
  }

  private take(prompt: string) {
    const index = this.pending.findIndex((p) => p.prompt === prompt)
    if (index < 0) throw new Error(`no call in flight for ${prompt}`)
    this.inFlight--
    return this.pending.splice(index, 1)[0].answer
  }

  answer(prompt: string): void {
    this.take(prompt).resolve({ text: `done: ${prompt}`, toolCalls: [], finishReason: 'stop', usage: { inputTokens: 1, outputTokens: 1 } })
  }

  refuse(prompt: string, retryAfterMs?: number): void {
    this.refusedAt.push(performance.now())
    this.take(prompt).reject(new RateLimitedError('RATE_LIMITED', 'HTTP 429: slow down', { endpoint: 'the test endpoint', status: 429, retryAfterMs }))
  }

  fail(prompt: string): void {
    this.take(prompt).reject(new Error('HTTP 400: bad request'))
  }

  get open(): string[] {
    return this.pending.map((p) => p.prompt)
  }
}

/** No jitter: pauses are exactly what the test announces. */
const QUIET = { maxJitterMs: 0 }

describe('the model gate\'s shared backoff after 429/503 (rateLimit)', () => {
  let ctx: Context | undefined

  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
  })

  async function runtime(config: AgentRuntime.Config, models: Record<string, ChatModel>) {
    ;({ ctx } = await setup(config))
    for (const [name, model] of Object.entries(models)) ctx.agents.registerModel(name, model)
    await ctx.lifecycle.flush()
    return ctx
  }
  const run = (c: Context, prompt: string, model = 'm', signal?: AbortSignal) => c.agents.create({ model }).run(prompt, { signal })

  it('is on by default: calls pass straight through, and the adapter is told the gate retries rate limits', async () => {
    const model = new Endpoint()
    const c = await runtime({}, { m: model })
    const done = run(c, 'a')
    await until(() => model.inFlight === 1, 'the call began')
    model.answer('a')
    expect((await done).stopReason).to.equal('completed')
    expect(model.flags).to.deep.equal(['gate'])
    expect((await done).usage.rateLimitWaitMs).to.equal(undefined) // it never waited
  })

  it('a pause as long as the bounds allow (Retry-After, jitter both at their max) arms no timer Node would fire at once', async () => {
    const warnings: string[] = []
    const warned = (warning: Error) => { warnings.push(warning.name) }
    process.on('warning', warned)
    try {
      const model = new Endpoint()
      // maxWaitMs at its bound too: the next call's wait budget ends after the pause, so it waits (its own timer armed as well).
      const bounds = { maxRetryAfterMs: MAX_TIMER_MS, maxJitterMs: MAX_TIMER_MS, maxWaitMs: MAX_TIMER_MS }
      const c = await runtime({ rateLimit: bounds }, { m: model })
      const refused = run(c, 'a')
      await until(() => model.inFlight === 1, 'the call began')
      model.refuse('a', MAX_TIMER_MS)
      // The refused call gives up (its pause reaches maxWaitMs); the endpoint stays paused for the next one.
      expect((await refused).stopReason).to.equal('error')
      const controller = new AbortController()
      const late = run(c, 'late', 'm', controller.signal)
      await until(() => c.agents.modelGate!.endpoint('test-endpoint ')?.waiting === 1, 'the next call waits for the pause')
      // A timer Node could not honour would fire within a millisecond and arm the next, warning each time.
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(model.began).to.deep.equal(['a'])
      controller.abort()
      expect((await late).stopReason).to.equal('aborted')
      expect(warnings).to.not.include('TimeoutOverflowWarning')
    } finally {
      process.off('warning', warned)
    }
  })

  it('a refusal pauses every call to the endpoint; siblings wait in the queue and the refused call goes first', async () => {
    const model = new Endpoint()
    const c = await runtime({ rateLimit: { ...QUIET } }, { m: model })
    const runs = ['a', 'b'].map((p) => run(c, p))
    await until(() => model.inFlight === 2, 'both calls began')
    model.refuse('a', 60)
    await until(() => c.agents.modelGate!.endpoint('test-endpoint ')?.waiting === 1, 'a waits for the pause')
    // While paused, a new call does not reach the model either; it queues behind the refused one.
    const late = run(c, 'late')
    await until(() => c.agents.modelGate!.endpoint('test-endpoint ')?.waiting === 2, 'the late call waits too')
    expect(model.began).to.deep.equal(['a', 'b'])
    model.answer('b') // a call sent before the refusal still lands
    await until(() => model.began.length === 3, 'the pause ended')
    expect(model.began).to.deep.equal(['a', 'b', 'a']) // the retry first, at the head of the queue
    // The refusal also halved the endpoint's concurrency (2 in flight → 1): the late call waits for the retry to end.
    await tick()
    expect(model.inFlight).to.equal(1)
    model.answer('a')
    await until(() => model.began.length === 4, 'the late call began')
    expect(model.began[3]).to.equal('late')
    model.answer('late')
    const results = await Promise.all([...runs, late])
    expect(results.map((r) => r.stopReason)).to.deep.equal(['completed', 'completed', 'completed'])
    // Time spent waiting is reported apart from work: at least the announced pause, on the runs that waited.
    expect(results[0].usage.rateLimitWaitMs).to.be.at.least(60 - 1) // the 60 ms pause: from the refusal to the retry
    expect(results[2].usage.rateLimitWaitMs).to.be.at.least(1)
    expect(results[1].usage.rateLimitWaitMs).to.equal(undefined)
    expect(results[0].usage).to.include({ inputTokens: 1, outputTokens: 1 })
  })

  it('AIMD: a refusal halves the concurrency once per congestion; successes raise it by one per recoverAfter, back to unlimited', async () => {
    const model = new Endpoint()
    const c = await runtime({ rateLimit: { ...QUIET, recoverAfter: 2 } }, { m: model })
    const prompts = Array.from({ length: 8 }, (_, i) => `p${i}`)
    const runs = prompts.map((p) => run(c, p))
    await until(() => model.inFlight === 8, 'eight calls in flight')
    const status = () => c.agents.modelGate!.endpoint('test-endpoint ')!
    model.refuse('p0', 5)
    await tick()
    expect(status().limit).to.equal(4)
    // Three more refusals of calls sent before the decrease: the same congestion, no second halving.
    for (const p of ['p1', 'p2', 'p3']) model.refuse(p, 5)
    await tick()
    expect(status().limit).to.equal(4)
    for (const p of ['p4', 'p5', 'p6', 'p7']) model.answer(p)
    await until(() => model.began.length === 12, 'the four refused calls are retried')
    expect(model.inFlight).to.equal(4)
    // Two successes: the limit grows by one; two more: by one again.
    model.answer('p0')
    model.answer('p1')
    await tick()
    expect(status()?.limit ?? Infinity).to.equal(5)
    model.answer('p2')
    model.answer('p3')
    await Promise.all(runs)
    expect(c.agents.modelGate!.endpoint('test-endpoint ')?.limit ?? Infinity).to.equal(6)

    // A refusal of a call sent after the decrease is new congestion: it halves again.
    const more = ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q6'].map((p) => run(c, p))
    await until(() => model.inFlight === 6 && status().waiting === 1, 'six in flight under the limit, one waiting')
    model.refuse('q0', 5)
    await tick()
    expect(status().limit).to.equal(3)
    for (const p of ['q1', 'q2', 'q3', 'q4', 'q5']) model.answer(p)
    await until(() => model.inFlight === 2, 'the waiting call and the retry began after the pause')
    for (const p of model.open) model.answer(p)
    expect((await Promise.all(more)).every((r) => r.stopReason === 'completed')).to.equal(true)
    expect(model.most).to.equal(8)
  })

  it('recovered: once the limit grows back to what was in flight when the trouble began, the endpoint is unlimited and forgotten', async () => {
    const model = new Endpoint()
    const c = await runtime({ rateLimit: { ...QUIET, recoverAfter: 1 } }, { m: model })
    const status = () => c.agents.modelGate!.endpoint('test-endpoint ')
    const first = ['a', 'b', 'c', 'd'].map((p) => run(c, p))
    await until(() => model.inFlight === 4, 'four calls in flight')
    model.refuse('a', 5)
    await until(() => status()?.limit === 2, 'halved from 4')
    for (const p of ['b', 'c', 'd']) model.answer(p) // sent before the decrease: they do not raise it
    await until(() => model.inFlight === 1, 'the retry began')
    expect(status()!.limit).to.equal(2)
    model.answer('a')
    await Promise.all(first)
    expect(status()!.limit).to.equal(3)
    const next = run(c, 'e')
    await until(() => model.inFlight === 1, 'e began')
    model.answer('e')
    await next
    expect(status()).to.equal(undefined) // 4 reached: unlimited again, nothing kept
    const last = ['f', 'g', 'h', 'i', 'j'].map((p) => run(c, p))
    await until(() => model.inFlight === 5, 'five in flight: no limit')
    for (const p of ['f', 'g', 'h', 'i', 'j']) model.answer(p)
    expect((await Promise.all(last)).every((r) => r.stopReason === 'completed')).to.equal(true)
  })

  it('an idle endpoint keeps a count of 0 (no table rebuilt per call); a host calling many endpoints keeps at most 64 such counts', async () => {
    const model = new Endpoint()
    const c = await runtime({}, { m: model })
    const counts = () => (c.agents.modelGate as unknown as { unlimited: Map<string, number> }).unlimited
    for (let i = 0; i < 200; i++) {
      const done = run(c, `call ${i}`)
      await until(() => model.inFlight === 1, 'the call began')
      model.answer(`call ${i}`)
      await done
    }
    expect([...counts()]).to.deep.equal([['test-endpoint ', 0]])
    // One model id per call: 200 endpoints, each idle once its call ends.
    for (let i = 0; i < 200; i++) {
      const done = run(c, `id call ${i}`, `m:id-${i}`)
      await until(() => model.inFlight === 1, 'the call began')
      model.answer(`id call ${i}`)
      await done
    }
    expect(counts().size).to.equal(64)
    expect([...counts().values()].every((count) => count === 0)).to.equal(true)
  })

  it('short pauses, over and over: a call that queues as its pause ends is never stranded (the pause timer or the queue opens it)', async () => {
    const model = new Endpoint()
    const c = await runtime({ rateLimit: { ...QUIET, maxRetries: 100 } }, { m: model })
    for (let round = 0; round < 15; round++) {
      const done = run(c, `r${round}`)
      for (let attempt = 0; attempt < 3; attempt++) {
        await until(() => model.inFlight === 1, `round ${round}, attempt ${attempt} began`)
        model.refuse(`r${round}`, 1) // a 1 ms pause: the retry queues on either side of its end
      }
      await until(() => model.inFlight === 1, `round ${round}'s last attempt began`)
      model.answer(`r${round}`)
      expect((await done).stopReason).to.equal('completed')
    }
  })

  it('the retry budget: past maxRetries the run ends `error` with RATE_LIMITED naming the endpoint, the attempts and the wait', async () => {
    const model = new Endpoint()
    const c = await runtime({ rateLimit: { ...QUIET, maxRetries: 2, backoffMs: 8 } }, { m: model })
    const done = run(c, 'a')
    for (let attempt = 1; attempt <= 3; attempt++) {
      await until(() => model.inFlight === 1, `attempt ${attempt} began`)
      model.refuse('a') // no Retry-After: 8 ms, then 16, then 32 (doubling per refusal in a row)
    }
    const result = await done
    expect(result.stopReason).to.equal('error')
    expect(result.diagnostic).to.include('RATE_LIMITED: the model endpoint the test endpoint refused 3 attempts of this call for its rate (HTTP 429)')
    expect(result.diagnostic).to.include('the next wait is 32 ms')
    expect(result.diagnostic).to.include('rateLimit.maxRetries 2')
    expect(model.began).to.deep.equal(['a', 'a', 'a'])
    // Each retry began no sooner than its pause after the refusal (load only lengthens the gap; 1 ms of slack).
    expect(model.beganAt[1] - model.refusedAt[0]).to.be.at.least(8 - 1)
    expect(model.beganAt[2] - model.refusedAt[1]).to.be.at.least(16 - 1)
    // The reported wait runs from each refusal to the next attempt: at least both pauses, at most the run's span.
    const waited = Number(/waited (\d+) ms/.exec(result.diagnostic!)![1])
    expect(waited).to.be.within(8 + 16 - 2, model.refusedAt[2] - model.refusedAt[0] + 1)
  })

  it('the wait budget: an announced wait past maxWaitMs fails the call at once; a longer Retry-After is clamped to maxRetryAfterMs', async () => {
    const model = new Endpoint()
    const c = await runtime({ rateLimit: { ...QUIET, maxWaitMs: 1000, maxRetryAfterMs: 5000 } }, { m: model })
    const done = run(c, 'a')
    await until(() => model.inFlight === 1, 'the call began')
    model.refuse('a', 3_600_000) // "come back in an hour": clamped to 5 s, still past the 1 s budget
    const result = await done
    expect(result.stopReason).to.equal('error')
    expect(result.diagnostic).to.match(/refused 1 attempt of this call .*the next wait is 5000 ms/)
    expect(model.began).to.deep.equal(['a'])
    // The endpoint stays paused for everyone: the clamped time, not the hour.
    expect(c.agents.modelGate!.endpoint('test-endpoint ')!.pausedMs).to.be.within(1, 5000)
  })

  it('abort while waiting for the pause ends the run `aborted` at once; the model is not called again', async () => {
    const model = new Endpoint()
    const c = await runtime({ rateLimit: { ...QUIET } }, { m: model })
    const controller = new AbortController()
    const done = run(c, 'a', 'm', controller.signal)
    await until(() => model.inFlight === 1, 'the call began')
    model.refuse('a', 60_000)
    await until(() => c.agents.modelGate!.endpoint('test-endpoint ')?.waiting === 1, 'the call waits')
    expect(await isSettled(done)).to.equal(false)
    controller.abort('the user gave up')
    const result = await done
    expect(result).to.include({ stopReason: 'aborted', diagnostic: 'Aborted: the user gave up' })
    expect(c.agents.modelGate!.endpoint('test-endpoint ')!.waiting).to.equal(0)
    expect(c.agents.modelGate!.endpoint('test-endpoint ')!.pausedMs).to.be.above(0) // it left before the pause ended
    expect(model.began).to.deep.equal(['a'])
  })

  it('the key is the endpoint: models sharing a rateLimitKey pause together, another endpoint goes on', async () => {
    const one = new Endpoint('https://api.example/v1 gpt')
    const alias = new Endpoint('https://api.example/v1 gpt')
    const other = new Endpoint('http://127.0.0.1:11434/v1 llama')
    const c = await runtime({ rateLimit: { ...QUIET } }, { one, alias, other })
    const stop = new AbortController()
    const first = run(c, 'a', 'one', stop.signal)
    await until(() => one.inFlight === 1, 'the call began')
    one.refuse('a', 60_000)
    await until(() => c.agents.modelGate!.endpoint('https://api.example/v1 gpt')?.waiting === 1, 'it waits')
    const viaAlias = run(c, 'b', 'alias', stop.signal)
    const elsewhere = run(c, 'c', 'other')
    await until(() => other.inFlight === 1, 'the other endpoint is not held')
    await tick()
    expect(alias.began).to.deep.equal([]) // same endpoint: it waits too
    expect(c.agents.modelGate!.endpoint('https://api.example/v1 gpt')!.waiting).to.equal(2)
    other.answer('c')
    expect((await elsewhere).stopReason).to.equal('completed')
    stop.abort('done') // both leave the queue at once
    expect((await first).stopReason).to.equal('aborted')
    expect((await viaAlias).stopReason).to.equal('aborted')
  })

  it('other failures are not retried; with rateLimit.enabled false a refusal ends the run at once (the adapter\'s business)', async () => {
    const model = new Endpoint()
    const c = await runtime({ rateLimit: { ...QUIET } }, { m: model })
    const failed = run(c, 'a')
    await until(() => model.inFlight === 1, 'the call began')
    model.fail('a')
    expect((await failed).diagnostic).to.include('HTTP 400: bad request')
    expect(model.began).to.deep.equal(['a'])
    await c.stop()

    const plain = new Endpoint()
    const off = await runtime({ rateLimit: { enabled: false } }, { m: plain })
    expect(off.agents.modelGate).to.equal(undefined)
    const refused = run(off, 'b')
    await until(() => plain.inFlight === 1, 'the call began')
    plain.refuse('b', 5)
    expect((await refused).stopReason).to.equal('error')
    expect(plain.began).to.deep.equal(['b'])
    expect(plain.flags).to.deep.equal([undefined])
  })

  it('a refused call counts against the caps too: it frees its cap slot while it waits (maxModelCallsInFlight 1)', async () => {
    const slow = new Endpoint('slow endpoint')
    const fast = new Endpoint('fast endpoint')
    const c = await runtime({ maxModelCallsInFlight: 1, rateLimit: { ...QUIET } }, { slow, fast })
    const stop = new AbortController()
    const a = run(c, 'a', 'slow', stop.signal)
    await until(() => slow.inFlight === 1, 'the call began')
    const b = run(c, 'b', 'fast')
    await tick()
    expect(fast.began).to.deep.equal([]) // the one slot is taken
    slow.refuse('a', 60_000)
    await until(() => fast.inFlight === 1, 'the other endpoint\'s call got the slot while a waits out its pause')
    fast.answer('b')
    expect((await b).stopReason).to.equal('completed')
    expect(c.agents.modelGate!.inFlight()).to.equal(0)
    stop.abort('done')
    expect((await a).stopReason).to.equal('aborted')
  })
})
