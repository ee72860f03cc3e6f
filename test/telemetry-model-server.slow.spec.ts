// A chat span of a real model call (model-openai against an OpenAI-compatible server on 127.0.0.1)
// says which model answered, the response's id and where the call went (issue 45 item 7):
// gen_ai.response.model, gen_ai.response.id, server.address, server.port.
import { expect } from 'chai'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import * as ModelOpenAI from '@cordis-subagents/model-openai'
import Telemetry from '@cordis-subagents/telemetry'
import { completion, FakeOpenAIServer } from '../packages/model-openai/tests/fixtures/server.js'
import { type Host, startHost } from './support/host.js'
import { spansOf } from './support/traced-host.js'

describe('telemetry of a real model call: the response model, its id and the server', function () {
  this.timeout(20_000)
  let server: FakeOpenAIServer
  let host: Host | undefined
  let exporter: InMemorySpanExporter
  let provider: BasicTracerProvider

  beforeEach(async () => {
    server = await FakeOpenAIServer.start()
    exporter = new InMemorySpanExporter()
    provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    host = await startHost({
      agents: { model: 'openai' },
      before(ctx) {
        ctx.plugin(ModelOpenAI, { name: 'openai', baseURL: server.baseURL, model: 'asked-model', apiKey: 'sk-test' })
        ctx.plugin(Telemetry, { tracerProvider: provider })
      },
    })
  })

  afterEach(async () => {
    await host?.stop()
    host = undefined
    await provider.shutdown()
    await server.close()
  })

  async function oneCall(): Promise<Record<string, unknown>> {
    const agent = host!.ctx.agents.create({})
    try {
      const result = await agent.run('hello')
      expect(result.stopReason).to.equal('completed')
    } finally {
      await agent.dispose()
    }
    const chats = spansOf(exporter).filter((span) => span.name.startsWith('chat '))
    expect(chats).to.have.length(1)
    return chats[0].attributes
  }

  it('carries the model the server says answered, the response id and the server\'s address and port', async () => {
    server.reply({ body: { ...completion({ content: 'hi', model: 'served-model-2024' }), id: 'chatcmpl-abc123' } })
    const attributes = await oneCall()
    expect(attributes).to.include({
      'gen_ai.response.model': 'served-model-2024',
      'gen_ai.response.id': 'chatcmpl-abc123',
      'server.address': '127.0.0.1',
      'server.port': server.port,
    })
  })

  it('a response without a usable model or id (missing, not a string, or over 256 characters) leaves them out', async () => {
    server.reply({ body: { ...completion({ content: 'hi' }), model: 42, id: 'x'.repeat(257) } })
    const attributes = await oneCall()
    expect(attributes).to.not.have.property('gen_ai.response.model')
    expect(attributes).to.not.have.property('gen_ai.response.id')
    expect(attributes).to.include({ 'server.address': '127.0.0.1', 'server.port': server.port })
  })
})
