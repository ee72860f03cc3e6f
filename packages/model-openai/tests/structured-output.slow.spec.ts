import { expect } from 'chai'
import type { GenerateRequest } from '@cordis-subagents/agent'
import { OpenAIChatModel, type OpenAIChatModelOptions } from '@cordis-subagents/model-openai'
import { completion, FakeOpenAIServer } from './fixtures/server.js'

// Structured outputs: a request's output schema reaches an OpenAI-compatible server as
// `response_format: { type: 'json_schema' }`, only when the model says the endpoint supports it.

const SCHEMA = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }

function request(overrides: Partial<GenerateRequest> = {}): GenerateRequest {
  return { messages: [{ role: 'user', content: 'Count.' }], tools: [], signal: new AbortController().signal, ...overrides }
}

describe('OpenAIChatModel: structured outputs against a loopback server', () => {
  let server: FakeOpenAIServer

  function model(options: Partial<OpenAIChatModelOptions> = {}): OpenAIChatModel {
    return new OpenAIChatModel({ baseURL: server.baseURL, apiKey: '', model: 'm', maxRetries: 0, timeout: 10_000, ...options })
  }

  beforeEach(async () => {
    server = await FakeOpenAIServer.start()
  })

  afterEach(async () => {
    await server.close()
  })

  it('structuredOutput: true sends the schema as response_format json_schema and returns the JSON text', async () => {
    server.reply({ body: completion({ content: '{"n":3}' }) })
    const chat = model({ structuredOutput: true })
    expect(chat.structuredOutput).to.equal(true)
    const response = await chat.generate(request({ output: { name: 'final_answer', schema: SCHEMA } }))
    expect(response.text).to.equal('{"n":3}')
    const body = server.requests[0]!.body as Record<string, unknown>
    expect(body.response_format).to.deep.equal({ type: 'json_schema', json_schema: { name: 'final_answer', schema: SCHEMA } })
    expect(body).to.not.have.property('tools')
  })

  it('without the flag (the default) no response_format is sent, whatever the request asks', async () => {
    server.reply({ body: completion({ content: 'ok' }) })
    const chat = model()
    expect(chat.structuredOutput).to.equal(false)
    await chat.generate(request({ output: { name: 'final_answer', schema: SCHEMA } }))
    expect(server.requests[0]!.body).to.not.have.property('response_format')
  })

  it('a request without an output schema sends no response_format, flag or not', async () => {
    server.reply({ body: completion({ content: 'ok' }) })
    await model({ structuredOutput: true }).generate(request())
    expect(server.requests[0]!.body).to.not.have.property('response_format')
  })
})
