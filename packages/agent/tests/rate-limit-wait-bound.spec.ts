/// <reference types="mocha" />
import { setMaxListeners } from 'node:events'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { eventually, within } from '@cordis-subagents/test-support'
import { type AgentRuntime, type ChatModel, type GenerateRequest, type GenerateResponse, RateLimitedError, type RunResult } from '@cordis-subagents/agent'
import { type Deferred, deferred, setup } from './helpers.js'

// `rateLimit.maxWaitMs` bounds a call's whole wait on its endpoint's backoff: its own pauses, a pause another call's
// refusal extends while it waits, its turn in the queue of a paused or lowered endpoint before it was ever sent, and a
// cap it waits for before a retry. Past the bound the call fails RATE_LIMITED and is not sent again. The budgets here
// are short (tens to hundreds of ms); the bounds the specs wait with only end a hang.

const KEY = 'bounded-endpoint'

/** A model whose attempts the test answers or refuses (429, as an adapter throws it when the gate asks it to). */
class Endpoint implements ChatModel {
  /** The prompt of each attempt, in the order they began. */
  readonly began: string[] = []
  private readonly pending: Array<{ prompt: string; answer: Deferred<GenerateResponse> }> = []

  constructor(private readonly key = KEY) {}

  rateLimitKey(): string {
    return this.key
  }

  generate(request: GenerateRequest): Promise<GenerateResponse> {
    const prompt = request.messages.find((m) => m.role === 'user')!.content
    this.began.push(prompt)
    const answer = deferred<GenerateResponse>()
    this.pending.push({ prompt, answer })
    return answer.promise
  }

  get open(): string[] {
    return this.pending.map((p) => p.prompt)
  }

  private take(prompt: string) {
    const index = this.pending.findIndex((p) => p.prompt === prompt)
    if (index < 0) throw new Error(`no call in flight for ${prompt}`)
    return this.pending.splice(index, 1)[0].answer
  }

  answer(prompt: string): void {
    this.take(prompt).resolve({ text: `done: ${prompt}`, toolCalls: [], finishReason: 'stop', usage: { inputTokens: 1, outputTokens: 1 } })
  }

  refuse(prompt: string, retryAfterMs: number): void {
    this.take(prompt).reject(new RateLimitedError('RATE_LIMITED', 'HTTP 429', { endpoint: 'the test endpoint', status: 429, retryAfterMs }))
  }
}

/** Most a spec waits for a bounded call to end: far past its budget, far short of the pause it would otherwise wait out. */
const HANG = 5000

describe('the model gate\'s wait budget (rateLimit.maxWaitMs) bounds a call\'s whole wait on the backoff', () => {
  let ctx: Context | undefined
  /** Aborts whatever a spec leaves waiting (on the old gate a call could wait a long pause out). */
  let stop: AbortController

  beforeEach(() => {
    stop = new AbortController()
    setMaxListeners(50, stop.signal) // one spec runs a dozen calls on it
  })

  afterEach(async () => {
    stop.abort('the spec ended')
    await ctx?.stop()
    ctx = undefined
  })

  async function runtime(config: AgentRuntime.Config, models: Record<string, ChatModel>) {
    ;({ ctx } = await setup(config))
    for (const [name, model] of Object.entries(models)) ctx.agents.registerModel(name, model)
    await ctx.lifecycle.flush()
    const c = ctx
    const run = (prompt: string, model = 'm') => c.agents.create({ model }).run(prompt, { signal: stop.signal })
    const status = (key = KEY) => c.agents.modelGate!.endpoint(key)
    return { run, status }
  }

  function rateLimited(result: RunResult, maxWaitMs: number): string {
    expect(result.stopReason).to.equal('error')
    expect(result.diagnostic).to.include('RATE_LIMITED: the model endpoint the test endpoint ')
    expect(result.diagnostic).to.include(`rateLimit.maxWaitMs ${maxWaitMs} ms`)
    return result.diagnostic!
  }

  it('(a) a call waiting out its pause fails at once when another call\'s refusal carries the pause past its budget; no attempt after', async () => {
    const model = new Endpoint()
    const { run, status } = await runtime({ rateLimit: { maxJitterMs: 0, maxWaitMs: 200 } }, { m: model })
    const a = run('a')
    const b = run('b')
    await eventually(() => model.open.length === 2, 'both calls began')
    model.refuse('a', 50) // within a's budget: it waits
    await eventually(() => status()?.waiting === 1, 'a waits out its pause')
    model.refuse('b', 20_000) // past b's budget: b fails at once, and the endpoint is paused 20 s for everyone
    const failed = rateLimited(await within(b, HANG, 'b'), 200)
    expect(failed).to.include('the next wait is 20000 ms')
    const result = await within(a, HANG, 'a, whose pause now ends past its budget')
    const diagnostic = rateLimited(result, 200)
    expect(diagnostic).to.match(/refused 1 attempt of this call for its rate \(HTTP 429\); the call waited \d+ ms .*the next wait is \d+ ms/)
    const [, waited, next] = /waited (\d+) ms .*the next wait is (\d+) ms/.exec(diagnostic)!.map(Number)
    expect(waited + next).to.be.at.least(200) // the wait it was committed to would pass the budget
    expect(model.began).to.deep.equal(['a', 'b'])
    expect(status()!.waiting).to.equal(0)
  })

  it('(b) a call that queues at an endpoint paused past its budget fails at once, never sent', async () => {
    const model = new Endpoint()
    const { run, status } = await runtime({ rateLimit: { maxJitterMs: 0, maxWaitMs: 100 } }, { m: model })
    const a = run('a')
    await eventually(() => model.open.length === 1, 'a began')
    model.refuse('a', 20_000)
    rateLimited(await within(a, HANG, 'a'), 100)
    expect(status()!.pausedMs).to.be.above(10_000)
    const late = await within(run('late'), HANG, 'the call behind the 20 s pause')
    const diagnostic = rateLimited(late, 100)
    expect(diagnostic).to.match(/this call made 0 attempts and waited \d+ ms on the endpoint's backoff; the next wait is \d+ ms/)
    expect(model.began).to.deep.equal(['a'])
  })

  it('(b) a call queued behind calls refused again and again fails within its budget, never sent (so do the refused ones)', async () => {
    const model = new Endpoint()
    const { run, status } = await runtime({ rateLimit: { maxJitterMs: 0, maxWaitMs: 100, maxRetries: 100 } }, { m: model })
    // Twelve calls in flight; the first refusal lowers the endpoint to 6, which p6..p11 (never answered until the end) fill.
    const early = Array.from({ length: 12 }, (_, i) => run(`p${i}`))
    await eventually(() => model.open.length === 12, 'twelve calls began')
    model.refuse('p0', 40)
    await eventually(() => status()?.waiting === 1, 'p0 waits')
    const late = run('late')
    await eventually(() => status()?.waiting === 2, 'the late call queued behind the pause')
    // Refusal after refusal (each pause within the refused call's budget) keeps the endpoint paused.
    for (let i = 1; i < 6 && model.open.includes(`p${i}`); i++) {
      await new Promise((resolve) => setTimeout(resolve, 30))
      model.refuse(`p${i}`, 40)
    }
    const diagnostic = rateLimited(await within(late, HANG, 'the late call'), 100)
    expect(diagnostic).to.match(/this call made 0 attempts and waited \d+ ms/)
    expect(model.began).to.not.include('late')
    // The refused calls are bounded the same way: each ended RATE_LIMITED with no attempt after its first.
    for (const refused of await within(Promise.all(early.slice(0, 6)), HANG, 'the refused calls')) rateLimited(refused, 100)
    expect(model.began.filter((p) => p === 'p0')).to.deep.equal(['p0'])
    for (let i = 6; i < 12; i++) model.answer(`p${i}`)
    for (const done of await Promise.all(early.slice(6))) expect(done.stopReason).to.equal('completed')
  })

  it('a refused call that waits for a cap after its pause fails at its budget; it is not sent again (maxModelCallsInFlight 1)', async () => {
    const slow = new Endpoint()
    const other = new Endpoint('other endpoint')
    const { run } = await runtime({ maxModelCallsInFlight: 1, rateLimit: { maxJitterMs: 0, maxWaitMs: 150 } }, { slow, other })
    const a = run('a', 'slow')
    await eventually(() => slow.open.length === 1, 'a began')
    const b = run('b', 'other') // waits for the one slot
    slow.refuse('a', 20) // a frees the slot while it waits out its pause; b takes it and holds it
    await eventually(() => other.open.length === 1, 'b holds the slot')
    const diagnostic = rateLimited(await within(a, HANG, 'a, waiting for the slot b holds'), 150)
    const waited = Number(/waited (\d+) ms/.exec(diagnostic)![1])
    expect(waited).to.be.within(150, HANG) // it failed at its budget, not before
    expect(slow.began).to.deep.equal(['a'])
    other.answer('b')
    expect((await b).stopReason).to.equal('completed')
  })

  it('a call that waits less than its budget is sent and reports its wait', async () => {
    const model = new Endpoint()
    const { run, status } = await runtime({ rateLimit: { maxJitterMs: 0, maxWaitMs: 60_000 } }, { m: model })
    const a = run('a')
    await eventually(() => model.open.length === 1, 'a began')
    model.refuse('a', 30)
    await eventually(() => status()?.waiting === 1, 'a waits')
    const late = run('late')
    await eventually(() => model.open.length === 1, 'a was retried after its pause')
    model.answer('a')
    await eventually(() => model.open.includes('late'), 'the late call was sent')
    model.answer('late')
    const results = await Promise.all([a, late])
    expect(results.map((r) => r.stopReason)).to.deep.equal(['completed', 'completed'])
    expect(results[0].usage.rateLimitWaitMs).to.be.at.least(29)
    expect(results[1].usage.rateLimitWaitMs).to.be.at.least(1)
  })

  it('a call to an endpoint under backoff that is not paused and has a free slot arms no timer', async () => {
    const model = new Endpoint()
    const { run, status } = await runtime({ rateLimit: { maxJitterMs: 0, maxWaitMs: 60_000, recoverAfter: 100 } }, { m: model })
    const first = ['a', 'b', 'c', 'd'].map((p) => run(p))
    await eventually(() => model.open.length === 4, 'four calls began')
    model.refuse('a', 5) // the endpoint is lowered to 2 and paused for 5 ms
    for (const p of ['b', 'c', 'd']) model.answer(p)
    await eventually(() => model.began.length === 5 && status()!.pausedMs === 0, 'a was retried after its pause')
    model.answer('a')
    await Promise.all(first)
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
    const before = timers()
    const next = run('e')
    await eventually(() => model.open.includes('e'), 'e was sent')
    expect(status()!.limit).to.equal(2) // still under backoff: the call took its slot of the lowered endpoint
    expect(timers()).to.equal(before)
    model.answer('e')
    expect((await next).usage.rateLimitWaitMs).to.equal(undefined)
  })
})
