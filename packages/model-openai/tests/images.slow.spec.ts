/// <reference types="mocha" />
// A tool result's images reach a model that accepts images (`images: true`): after the run of tool
// messages, one user message of image_url parts (a tool message carries text only). A model without the
// flag gets the tool results' text only, as before.
import { expect } from 'chai'
import type { GenerateRequest, Message } from '@cordis-subagents/agent'
import { OpenAIChatModel, type OpenAIChatModelOptions } from '@cordis-subagents/model-openai'
import { completion, FakeOpenAIServer } from './fixtures/server.js'
import { recordingLogger } from './fixtures/logger.js'

const PNG = Buffer.from('not really a png').toString('base64')
const transcript: Message[] = [
  { role: 'user', content: 'look' },
  { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'shot', input: {} }, { id: 'c2', name: 'plain', input: {} }] },
  { role: 'tool', toolCallId: 'c1', name: 'shot', content: '[image image/png, 16 bytes; shown to models that accept images]', images: [{ mimeType: 'image/png', data: PNG }] },
  { role: 'tool', toolCallId: 'c2', name: 'plain', content: 'no picture' },
  { role: 'user', content: 'what do you see?' },
]

describe('OpenAIChatModel: images of tool results', () => {
  let server: FakeOpenAIServer
  const { logger } = recordingLogger()

  function generate(options: Partial<OpenAIChatModelOptions>) {
    const model = new OpenAIChatModel({ baseURL: server.baseURL, apiKey: '', model: 'm', maxRetries: 0, timeout: 10_000, logger, ...options })
    const request: GenerateRequest = { messages: transcript, tools: [], signal: new AbortController().signal }
    return model.generate(request)
  }

  beforeEach(async () => {
    server = await FakeOpenAIServer.start()
  })

  afterEach(async () => {
    await server.close()
  })

  it('images: true sends them as image_url parts of one user message after the tool results', async () => {
    server.reply({ body: completion({ content: 'a picture' }) })
    await generate({ images: true })
    const messages = server.requests[0]!.body.messages as unknown[]
    expect(messages.slice(2)).to.deep.equal([
      { role: 'tool', tool_call_id: 'c1', content: '[image image/png, 16 bytes; shown to models that accept images]' },
      { role: 'tool', tool_call_id: 'c2', content: 'no picture' },
      { role: 'user', content: [
        { type: 'text', text: 'Image from the shot tool result:' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
      ] },
      { role: 'user', content: 'what do you see?' },
    ])
  })

  it('without the flag the model reads the tool results\' text only', async () => {
    server.reply({ body: completion({ content: 'text only' }) })
    await generate({})
    const messages = server.requests[0]!.body.messages as unknown[]
    expect(messages.slice(2)).to.deep.equal([
      { role: 'tool', tool_call_id: 'c1', content: '[image image/png, 16 bytes; shown to models that accept images]' },
      { role: 'tool', tool_call_id: 'c2', content: 'no picture' },
      { role: 'user', content: 'what do you see?' },
    ])
  })
})
