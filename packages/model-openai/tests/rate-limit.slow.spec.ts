import { expect } from 'chai'
import { type GenerateRequest, RateLimitedError } from '@cordis-subagents/agent'
import { OpenAIChatModel, type OpenAIChatModelOptions } from '@cordis-subagents/model-openai'
import { apiError, completion, FakeOpenAIServer } from './fixtures/server.js'
import { recordingLogger } from './fixtures/logger.js'

const KEY = 'sk-test-RATE-9d1e4b7a02c6'

function request(overrides: Partial<GenerateRequest> = {}): GenerateRequest {
  return { messages: [{ role: 'user', content: 'Hi' }], tools: [], signal: new AbortController().signal, ...overrides }
}

describe('model-openai under the model gate: a 429/503 comes back as RATE_LIMITED with the endpoint and the wait', () => {
  let server: FakeOpenAIServer
  const { logger } = recordingLogger()

  function model(options: Partial<OpenAIChatModelOptions> = {}): OpenAIChatModel {
    return new OpenAIChatModel({ baseURL: server.baseURL, apiKey: KEY, model: 'default-model', maxRetries: 2, timeout: 10_000, logger, ...options })
  }

  beforeEach(async () => {
    server = await FakeOpenAIServer.start()
  })

  afterEach(async () => {
    await server.close()
  })

  it('429 with Retry-After (seconds): one request, no retry of the SDK; the error names the endpoint, the status and the wait', async () => {
    server.reply({ status: 429, body: apiError('Rate limit reached for requests', 'requests', 'rate_limit_exceeded'), headers: { 'retry-after': '3' } })
    const m = model()
    const error = await m.generate(request({ rateLimits: 'gate', modelId: 'gpt-x' })).then(() => undefined, (e: unknown) => e)
    expect(error).to.be.an.instanceOf(RateLimitedError)
    const refused = error as RateLimitedError
    expect(refused.code).to.equal('RATE_LIMITED')
    expect(refused.endpoint).to.equal(`${server.baseURL} (model "gpt-x")`).and.equal(m.rateLimitKey('gpt-x'))
    expect([refused.status, refused.retryAfterMs]).to.deep.equal([429, 3000])
    expect(refused.message).to.include('HTTP 429').and.include('Rate limit reached').and.not.include(KEY)
    expect(server.requests).to.have.length(1) // maxRetries 2, yet the SDK did not retry it: the gate does
  })

  it('503 with Retry-After as an HTTP date; 503 and 429 without one: the wait is undefined (the gate backs off on its own)', async () => {
    const inAnHour = new Date(Date.now() + 3_600_000).toUTCString()
    server.reply(
      { status: 503, body: apiError('overloaded', 'server_error'), headers: { 'retry-after': inAnHour } },
      { status: 503, body: apiError('overloaded', 'server_error') },
      { status: 429, body: apiError('slow down', 'requests') },
    )
    const m = model()
    const dated = await m.generate(request({ rateLimits: 'gate' })).catch((e: RateLimitedError) => e) as RateLimitedError
    expect(dated.status).to.equal(503)
    expect(dated.retryAfterMs).to.be.within(3_000_000, 3_600_000) // the gate clamps it (rateLimit.maxRetryAfterMs)
    for (const status of [503, 429]) {
      const bare = await m.generate(request({ rateLimits: 'gate' })).catch((e: RateLimitedError) => e) as RateLimitedError
      expect([bare.code, bare.status, bare.retryAfterMs]).to.deep.equal(['RATE_LIMITED', status, undefined])
    }
    expect(server.requests).to.have.length(3)
  })

  it('without the gate nothing changes: the SDK retries a 429 itself (honouring retry-after-ms) and the call succeeds', async () => {
    server.reply(
      { status: 429, body: apiError('slow down', 'requests'), headers: { 'retry-after-ms': '5' } },
      { body: completion({ content: 'hello' }) },
    )
    const response = await model().generate(request())
    expect(response).to.include({ text: 'hello', finishReason: 'stop' })
    expect(server.requests).to.have.length(2)
  })

  it('under the gate the SDK still retries what is not a rate refusal (a 500), and an exhausted quota stays a diagnostic', async () => {
    server.reply(
      { status: 500, body: apiError('oops', 'server_error'), headers: { 'retry-after-ms': '5' } },
      { body: completion({ content: 'after the 500' }) },
      { status: 429, body: apiError('You exceeded your current quota', 'insufficient_quota', 'insufficient_quota') },
    )
    const m = model({ maxRetries: 1 })
    expect(await m.generate(request({ rateLimits: 'gate' }))).to.include({ text: 'after the 500' })
    const quota = await m.generate(request({ rateLimits: 'gate' }))
    expect(quota.finishReason).to.equal('error')
    expect(quota.diagnostic).to.include('HTTP 429').and.include('exceeded your current quota')
    expect(server.requests).to.have.length(3) // no retry of the quota refusal either (x-should-retry: false)
  })
})
