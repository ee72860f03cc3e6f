import { expect } from 'chai'
import type { ChatModel, GenerateRequest, GenerateResponse } from '@cordis-subagents/agent'
import { LazyAbort } from '@cordis-subagents/shared'
import { signalsMadeDuring } from '@cordis-subagents/test-support'
import { deferred, modelPlugin, setup, type Setup } from './helpers.js'

const answer = (text: string): GenerateResponse => ({ text, toolCalls: [], finishReason: 'stop' })

describe("a turn's signal is made when first read", () => {
  let s: Setup
  beforeEach(async () => { s = await setup() })
  afterEach(async () => { await s.ctx.stop() })

  async function agentWith(model: ChatModel) {
    s.ctx.plugin(modelPlugin('m', model))
    await s.ctx.lifecycle.flush()
    return s.ctx.agents.create({ model: 'm' })
  }

  it('a turn whose model never reads request.signal makes no AbortSignal', async () => {
    const agent = await agentWith({ generate: async () => answer('done') })
    const made = await signalsMadeDuring(async () => {
      expect((await agent.run('go')).stopReason).to.equal('completed')
    })
    expect(made).to.equal(0)
    await agent.dispose()
  })

  it('a model that reads it gets the turn\'s signal, aborted with the caller\'s reason', async () => {
    const requests: GenerateRequest[] = []
    const reached = deferred<void>()
    const agent = await agentWith({
      generate: (request) => {
        requests.push(request)
        reached.resolve()
        return new Promise<GenerateResponse>((_, reject) => {
          request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
        })
      },
    })
    const caller = new AbortController()
    const running = agent.run('go', { signal: caller.signal })
    await reached.promise
    expect(requests[0].signal).to.be.instanceOf(AbortSignal)
    expect(requests[0].signal.aborted).to.equal(false)
    caller.abort('the user left')
    const result = await running
    expect(result.stopReason).to.equal('aborted')
    expect(requests[0].signal.aborted).to.equal(true)
    expect(requests[0].signal.reason).to.equal('the user left')
    await agent.dispose()
  })

  it('read only after the turn was aborted, it is already aborted, with the reason', async () => {
    let request: GenerateRequest | undefined
    const reached = deferred<void>()
    const late = deferred<GenerateResponse>()
    const agent = await agentWith({
      generate: (given) => {
        request = given
        reached.resolve()
        return late.promise
      },
    })
    const caller = new AbortController()
    const running = agent.run('go', { signal: caller.signal })
    await reached.promise
    caller.abort('too late')
    expect((await running).stopReason).to.equal('aborted')
    expect(request!.signal.aborted).to.equal(true)
    expect(request!.signal.reason).to.equal('too late')
    // The turn stopped waiting for the model; dispose waits for the call to settle.
    late.resolve(answer('ignored'))
    await agent.dispose()
  })

  it('the request is a plain one to read: `signal` is an own enumerable key, and a spread copy carries the signal', async () => {
    let request: GenerateRequest | undefined
    const agent = await agentWith({ generate: async (given) => { request = given; return answer('done') } })
    await agent.run('go')
    expect(Object.keys(request!)).to.include.members(['system', 'messages', 'tools', 'signal', 'maxTokens', 'modelId', 'maxToolCalls'])
    const copy = { ...request! }
    expect(copy.signal).to.equal(request!.signal)
    expect(copy.signal).to.be.instanceOf(AbortSignal)
    await agent.dispose()
  })

  it('a run given an abortScope waits on it without an AbortSignal, and ends aborted with its reason', async () => {
    const reached = deferred<void>()
    const late = deferred<GenerateResponse>()
    const agent = await agentWith({ generate: () => { reached.resolve(); return late.promise } })
    const scope = new LazyAbort()
    let running!: Promise<{ stopReason: string; diagnostic?: string }>
    const made = await signalsMadeDuring(async () => {
      running = agent.run('go', { abortScope: scope })
      await reached.promise
      scope.abort('the host shut down')
      expect((await running).stopReason).to.equal('aborted')
    })
    expect(made).to.equal(0)
    expect((await running).diagnostic).to.include('the host shut down')
    late.resolve(answer('ignored'))
    await agent.dispose()
  })

  it('signal and abortScope together, or an abortScope that is not one, are refused with INVALID_OPTIONS', async () => {
    const agent = await agentWith({ generate: async () => answer('done') })
    const codeOf = (options: object) => agent.run('go', options as never).then(() => 'ran', (error: { code?: string }) => error.code)
    expect(await codeOf({ signal: new AbortController().signal, abortScope: new LazyAbort() })).to.equal('INVALID_OPTIONS')
    expect(await codeOf({ abortScope: new AbortController().signal })).to.equal('INVALID_OPTIONS')
    expect(await codeOf({ abortScope: { aborted: false } })).to.equal('INVALID_OPTIONS')
    expect(await codeOf({ abortScope: new LazyAbort() })).to.equal('ran')
    await agent.dispose()
  })
})
