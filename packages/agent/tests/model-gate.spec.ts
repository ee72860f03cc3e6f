/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import type { Agent, AgentRuntime, ChatModel, GenerateRequest, GenerateResponse, RunResult } from '@cordis-subagents/agent'
import { type Deferred, deferred, makeTool, setup, tick, toolPlugin } from './helpers.js'
import { isSettled, until } from '../../../test/support/async.js'

/**
 * A model whose calls are answered by the test (`answer`), or after a few macrotask hops when
 * `auto` is set. It counts its calls in flight, which is what the gate must bound.
 */
class CountingModel implements ChatModel {
  inFlight = 0
  most = 0
  /** The prompt of each call, in the order the calls began. */
  readonly began: string[] = []
  private readonly pending: Array<{ prompt: string; answer: Deferred<GenerateResponse> }> = []

  constructor(private readonly auto?: (request: GenerateRequest) => GenerateResponse) {}

  generate(request: GenerateRequest): Promise<GenerateResponse> {
    const prompt = request.messages.find((m) => m.role === 'user')!.content
    this.inFlight++
    this.most = Math.max(this.most, this.inFlight)
    this.began.push(prompt)
    const answer = deferred<GenerateResponse>()
    this.pending.push({ prompt, answer })
    if (this.auto) {
      const reply = this.auto(request)
      tick(2).then(() => this.answer(prompt, reply))
    }
    return answer.promise
  }

  /** Answers the oldest call in flight for `prompt`. */
  answer(prompt: string, response: GenerateResponse = { text: `done: ${prompt}`, toolCalls: [], finishReason: 'stop' }): void {
    const index = this.pending.findIndex((p) => p.prompt === prompt)
    if (index < 0) throw new Error(`no call in flight for ${prompt}`)
    const [call] = this.pending.splice(index, 1)
    this.inFlight--
    call.answer.resolve(response)
  }
}

const text = (t: string): GenerateResponse => ({ text: t, toolCalls: [], finishReason: 'stop' })

describe('the model gate: calls in flight across all root runs (maxModelCallsInFlight, models.<name>.maxInFlight)', () => {
  let ctx: Context | undefined

  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
  })

  async function runtime(config: AgentRuntime.Config, models: Record<string, ChatModel>) {
    ;({ ctx } = await setup(config))
    ctx.plugin(toolPlugin(makeTool('echo', { execute: async ({ text }) => ({ content: `echo ${text}` }) })))
    for (const [name, model] of Object.entries(models)) ctx.agents.registerModel(name, model)
    await ctx.lifecycle.flush()
    return ctx
  }

  it('twelve concurrent root runs of three steps under a cap of 3: never more than 3 calls in flight, and all finish', async () => {
    const model = new CountingModel((request) => request.messages.length < 5
      ? { text: '', toolCalls: [{ id: `c${request.messages.length}`, name: 'echo', input: { text: 'x' } }], finishReason: 'tool-calls' }
      : text('finished'))
    const c = await runtime({ maxModelCallsInFlight: 3 }, { m: model })
    const runs = Array.from({ length: 12 }, (_, i) => c.agents.create({ model: 'm' }).run(`task ${i}`))
    const results = await Promise.all(runs)
    expect(results.map((r) => r.stopReason)).to.deep.equal(Array(12).fill('completed'))
    expect(model.began).to.have.length(36)
    expect(model.most).to.equal(3) // the cap was reached, and never passed
    expect(c.agents.modelGate!.inFlight()).to.equal(0)
  })

  it('is FIFO: waiting calls get a slot in the order they arrived', async () => {
    const model = new CountingModel()
    const c = await runtime({ maxModelCallsInFlight: 1 }, { m: model })
    const runs = ['a', 'b', 'c', 'd'].map((p) => c.agents.create({ model: 'm' }).run(p))
    await until(() => model.began.length === 1, 'the first call began')
    for (const p of ['a', 'b', 'c']) {
      model.answer(p)
      await until(() => model.inFlight === 1, `the call after ${p} began`)
    }
    model.answer('d')
    await Promise.all(runs)
    expect(model.began).to.deep.equal(['a', 'b', 'c', 'd'])
    expect(model.most).to.equal(1)
  })

  it('abort while queued: the run ends `aborted` at once, leaves the queue, and its model is never called', async () => {
    const model = new CountingModel()
    const c = await runtime({ maxModelCallsInFlight: 1 }, { m: model })
    const holder = c.agents.create({ model: 'm' }).run('holder')
    await until(() => model.began.length === 1, 'the holder\'s call began')
    const controller = new AbortController()
    const queued = c.agents.create({ model: 'm' }).run('queued', { signal: controller.signal })
    const after = c.agents.create({ model: 'm' }).run('after')
    await tick()
    expect(await isSettled(queued)).to.equal(false)
    controller.abort('the user gave up')

    const result = await queued // the holder's call is still in flight
    expect(result).to.include({ stopReason: 'aborted', diagnostic: 'Aborted: the user gave up' })
    expect(model.began).to.deep.equal(['holder'])
    // The slot goes to the run behind it: the aborted waiter left no hole in the queue.
    model.answer('holder')
    await until(() => model.began.length === 2, 'the next call began')
    expect(model.began).to.deep.equal(['holder', 'after'])
    model.answer('after')
    expect((await holder).stopReason).to.equal('completed')
    expect((await after).stopReason).to.equal('completed')
  })

  it('per-model caps are independent: a full model does not hold back another; each is capped on its own', async () => {
    const slow = new CountingModel()
    const fast = new CountingModel()
    const c = await runtime({ models: { slow: { maxInFlight: 1 }, fast: { maxInFlight: 2 } } }, { slow, fast })
    const slowRuns = ['s1', 's2'].map((p) => c.agents.create({ model: 'slow' }).run(p))
    const fastRuns = ['f1', 'f2', 'f3'].map((p) => c.agents.create({ model: 'fast' }).run(p))
    await until(() => slow.began.length === 1 && fast.began.length === 2, 'each model\'s cap is full')
    await tick()
    expect(slow.began).to.deep.equal(['s1'])
    expect(fast.began).to.deep.equal(['f1', 'f2'])
    expect(c.agents.modelGate!.inFlight('slow')).to.equal(1)
    expect(c.agents.modelGate!.inFlight('fast')).to.equal(2)
    fast.answer('f1')
    await until(() => fast.began.length === 3, 'f3 began')
    expect(slow.began).to.deep.equal(['s1']) // still capped
    slow.answer('s1')
    await until(() => slow.began.length === 2, 's2 began')
    slow.answer('s2')
    fast.answer('f2')
    fast.answer('f3')
    const results = await Promise.all([...slowRuns, ...fastRuns])
    expect(results.map((r) => r.stopReason)).to.deep.equal(Array(5).fill('completed'))
    expect([slow.most, fast.most]).to.deep.equal([1, 2])
  })

  it('a model with a cap of its own also counts against the process-wide cap', async () => {
    const a = new CountingModel()
    const b = new CountingModel()
    const c = await runtime({ maxModelCallsInFlight: 1, models: { a: { maxInFlight: 5 } } }, { a, b })
    const runs = [c.agents.create({ model: 'a' }).run('on a'), c.agents.create({ model: 'b' }).run('on b')]
    await until(() => a.began.length + b.began.length === 1, 'one call began')
    await tick()
    expect(a.began.length + b.began.length).to.equal(1)
    const first = a.began.length ? 'a' : 'b'
    ;(first === 'a' ? a : b).answer(first === 'a' ? 'on a' : 'on b')
    await until(() => a.began.length + b.began.length === 2, 'the other call began')
    ;(first === 'a' ? b : a).answer(first === 'a' ? 'on b' : 'on a')
    expect((await Promise.all(runs)).map((r) => r.stopReason)).to.deep.equal(['completed', 'completed'])
  })

  it('no deadlock with delegation: a parent waiting for its child holds no slot (cap 1)', async () => {
    const model = new CountingModel((request) => {
      const prompt = request.messages[0].content
      const last = request.messages[request.messages.length - 1]
      if (prompt === 'parent' && last.role === 'user') return { text: '', toolCalls: [{ id: 'd', name: 'delegate', input: { text: 'x' } }], finishReason: 'tool-calls' }
      return text(prompt === 'parent' ? `parent got: ${last.content}` : 'child answer')
    })
    ;({ ctx } = await setup({ maxModelCallsInFlight: 1 }))
    ctx.agents.registerModel('m', model)
    ctx.plugin(toolPlugin(makeTool('delegate', {
      execute: async (_input, exec) => {
        const child = ctx!.agents.create({ parent: exec.agent as Agent })
        const result = await child.run('child', { signal: exec.signal })
        return { content: result.text }
      },
    })))
    await ctx.lifecycle.flush()
    const result = await ctx.agents.create({ model: 'm' }).run('parent')
    expect(result).to.include({ stopReason: 'completed', text: 'parent got: child answer' })
    expect(model.most).to.equal(1)
  })

  it('a full queue refuses the call: the run ends `error` with MODEL_GATE_FULL and what to do', async () => {
    const model = new CountingModel()
    const c = await runtime({ maxModelCallsInFlight: 1, maxQueuedModelCalls: 1 }, { m: model })
    const holder = c.agents.create({ model: 'm' }).run('holder')
    await until(() => model.began.length === 1, 'the holder\'s call began')
    const queued = c.agents.create({ model: 'm' }).run('queued')
    const refused: RunResult = await c.agents.create({ model: 'm' }).run('refused')
    expect(refused.stopReason).to.equal('error')
    expect(refused.diagnostic).to.include('1 model calls already wait for the process-wide cap (maxModelCallsInFlight)')
    model.answer('holder')
    await until(() => model.began.length === 2, 'the queued call began')
    model.answer('queued')
    expect((await queued).stopReason).to.equal('completed')
    expect((await holder).stopReason).to.equal('completed')
  })

  it('a model whose generate() throws at once frees its slot', async () => {
    let calls = 0
    const broken: ChatModel = {
      generate: () => {
        if (++calls === 1) throw new Error('bad request')
        return Promise.resolve(text('ok'))
      },
    }
    const c = await runtime({ maxModelCallsInFlight: 1 }, { m: broken })
    expect((await c.agents.create({ model: 'm' }).run('one')).stopReason).to.equal('error')
    expect((await c.agents.create({ model: 'm' }).run('two')).stopReason).to.equal('completed')
    expect(c.agents.modelGate!.inFlight()).to.equal(0)
  })

  it('without a cap and with the shared backoff off there is no gate (a model call pays one check)', async () => {
    const c = await runtime({ models: {}, rateLimit: { enabled: false } }, { m: new CountingModel(() => text('ok')) })
    expect(c.agents.modelGate).to.equal(undefined)
    expect((await c.agents.create({ model: 'm' }).run('go')).stopReason).to.equal('completed')
  })
})
