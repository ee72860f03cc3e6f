// "after N attempts" in a diagnostic: said only when the SDK retried the request, and N is the number of HTTP attempts
// actually made (the SDK's rule: a refused connection, a timeout, HTTP 408/409/429/5xx, and `x-should-retry` overrides).
import { createServer } from 'node:net'
import { expect } from 'chai'
import type { GenerateRequest } from '@cordis-subagents/agent'
import { OpenAIChatModel, type OpenAIChatModelOptions } from '@cordis-subagents/model-openai'
import { apiError, type CannedReply, FakeOpenAIServer } from './fixtures/server.js'
import { recordingLogger } from './fixtures/logger.js'

function request(overrides: Partial<GenerateRequest> = {}): GenerateRequest {
  return { messages: [{ role: 'user', content: 'Hi' }], tools: [], signal: new AbortController().signal, ...overrides }
}

/** Resolves with the port of a server that was listening and is now closed (connection refused). */
async function deadPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** A fetch for the model's `fetch` option that counts the HTTP attempts it is asked to make. */
function countingFetch() {
  const counter = { calls: 0 }
  const counted: typeof fetch = (input, init) => {
    counter.calls++
    return fetch(input, init)
  }
  return { counter, fetch: counted }
}

/** An error reply; `retry-after-ms: 0` keeps the SDK's back-off out of the spec when it retries. */
const failure = (status: number, message: string, headers: Record<string, string> = {}): CannedReply =>
  ({ status, body: apiError(message), headers: { 'retry-after-ms': '0', ...headers } })

describe('model-openai diagnostics: "after N attempts" only for a request the SDK retried, with the attempts made', () => {
  let server: FakeOpenAIServer
  const { logger } = recordingLogger()
  const warnings: Error[] = []
  const warned = (warning: Error) => warnings.push(warning)

  /** The defaults but the logger: maxRetries 2, so up to 3 attempts. */
  function model(options: Partial<OpenAIChatModelOptions> = {}): OpenAIChatModel {
    return new OpenAIChatModel({ baseURL: server.baseURL, apiKey: '', model: 'llama3.2', logger, ...options })
  }

  beforeEach(async () => {
    warnings.length = 0
    process.on('warning', warned)
    server = await FakeOpenAIServer.start()
  })

  afterEach(async () => {
    process.off('warning', warned)
    await server.close()
    expect(server.openSockets).to.equal(0)
  })

  it('a 4xx the SDK does not retry (400, 401, 403, 404, 422) is sent once and its diagnostic counts no attempts', async () => {
    const m = model()
    for (const status of [400, 401, 403, 422]) {
      server.requests.length = 0
      server.reply(failure(status, `refused with ${status}`))
      const res = await m.generate(request())
      expect(server.requests, `HTTP ${status}`).to.have.length(1)
      expect(res.diagnostic).to.include(`answered HTTP ${status}: refused with ${status}`).and.not.include('attempt')
    }
    server.requests.length = 0
    server.reply(failure(404, 'model "llama3.2" not found'))
    const res = await m.generate(request())
    expect(server.requests).to.have.length(1)
    expect(res.diagnostic).to.equal(`OpenAI-compatible endpoint ${server.baseURL} (model "llama3.2") answered HTTP 404: model "llama3.2" not found. `
      + 'Check "model" and that "baseURL" points at the API root (usually ending in /v1).')
  })

  it('408, 409, 429, 500 and 503 are retried to the end: the diagnostic says the 3 attempts the server saw', async () => {
    const m = model()
    for (const status of [408, 409, 429, 500, 503]) {
      server.requests.length = 0
      const fail = failure(status, `failed with ${status}`)
      server.reply(fail, fail, fail)
      const res = await m.generate(request())
      expect(server.requests, `HTTP ${status}`).to.have.length(3)
      expect(res.diagnostic).to.include(`answered HTTP ${status} after 3 attempts: failed with ${status}`)
    }
    // The fixture keeps one 'close' listener per keep-alive socket, not one per request.
    expect(warnings.map((warning) => warning.name)).to.not.include('MaxListenersExceededWarning')
  })

  it('a refused connection says "after 3 attempts", and 3 were made', async () => {
    const { counter, fetch } = countingFetch()
    const baseURL = `http://127.0.0.1:${await deadPort()}/v1`
    const res = await model({ baseURL, fetch }).generate(request())
    expect(counter.calls).to.equal(3)
    expect(res.diagnostic).to.equal(`OpenAI-compatible endpoint ${baseURL} (model "llama3.2"): connection failed (ECONNREFUSED) after 3 attempts. `
      + 'Check that the server is running and that "baseURL" is right.')
  })

  it('a timeout retried once says "after 2 attempts"; with maxRetries 0 a failure counts none', async () => {
    server.reply(() => { /* hold */ }, () => { /* hold */ })
    const res = await model({ timeout: 150, maxRetries: 1 }).generate(request())
    expect(server.requests).to.have.length(2)
    expect(res.diagnostic).to.include('no response within 150 ms after 2 attempts (timeout)')
    server.requests.length = 0
    server.reply(failure(503, 'down'))
    const once = await model({ maxRetries: 0 }).generate(request())
    expect(server.requests).to.have.length(1)
    expect(once.diagnostic).to.include('answered HTTP 503: down').and.not.include('attempt')
  })

  it('x-should-retry decides as in the SDK: "false" on a 503 sends it once, "true" on a 404 retries it', async () => {
    const m = model()
    server.reply(failure(503, 'not again', { 'x-should-retry': 'false' }))
    const once = await m.generate(request())
    expect(server.requests).to.have.length(1)
    expect(once.diagnostic).to.include('answered HTTP 503: not again').and.not.include('attempt')
    server.requests.length = 0
    const retried = failure(404, 'try again', { 'x-should-retry': 'true' })
    server.reply(retried, retried, retried)
    const thrice = await m.generate(request())
    expect(server.requests).to.have.length(3)
    expect(thrice.diagnostic).to.include('answered HTTP 404 after 3 attempts: try again')
  })

  it('counts the attempts made: a 503 and then a 404 is "HTTP 404 after 2 attempts"', async () => {
    server.reply(failure(503, 'busy'), failure(404, 'no such model'))
    const res = await model().generate(request())
    expect(server.requests).to.have.length(2)
    expect(res.diagnostic).to.include('answered HTTP 404 after 2 attempts: no such model')
  })

  it('under the model gate an exhausted quota (429 insufficient_quota) is sent once and counts no attempts', async () => {
    server.reply({ status: 429, body: apiError('You exceeded your current quota', 'insufficient_quota', 'insufficient_quota') })
    const res = await model().generate(request({ rateLimits: 'gate' }))
    expect(server.requests).to.have.length(1)
    expect(res.diagnostic).to.include('answered HTTP 429: You exceeded your current quota').and.not.include('attempt')
  })
})
