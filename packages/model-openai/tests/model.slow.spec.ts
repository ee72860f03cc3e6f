import { getEventListeners } from 'node:events'
import { createServer } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import { expect } from 'chai'
import type { GenerateRequest, Message } from '@cordis-subagents/agent'
import type { ToolSpec } from '@cordis-subagents/tools'
import { OpenAIChatModel, type OpenAIChatModelOptions } from '@cordis-subagents/model-openai'
import { apiError, completion, FakeOpenAIServer, sendJson } from './fixtures/server.js'
import { recordingLogger } from './fixtures/logger.js'

const KEY = 'sk-test-DISTINCTIVE-7f3a9c2e51b84d06'

const weatherTool: ToolSpec = {
  name: 'get_weather',
  description: 'Current weather for a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string', description: 'City name' } },
    required: ['city'],
    additionalProperties: false,
  },
}

/** `promise`, or a failure naming `what` once 10 s passed (generous: the waits under test are bounded by 800 ms). */
async function settlesWithin<T>(promise: Promise<T>, what: string): Promise<T> {
  const timer = new AbortController()
  const late = delay(10_000, undefined, { signal: timer.signal }).then(() => { throw new Error(`${what}: not settled within 10 s`) })
  try {
    return await Promise.race([promise, late])
  } finally {
    timer.abort()
    late.catch(() => {})
  }
}

function request(overrides: Partial<GenerateRequest> = {}): GenerateRequest {
  return {
    messages: [{ role: 'user', content: 'Hi there' }],
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  }
}

/** Resolves with the port of a server that was listening and is now closed (connection refused). */
async function deadPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

describe('OpenAIChatModel against a loopback chat-completions server', () => {
  let server: FakeOpenAIServer
  const { logged, logger } = recordingLogger()

  function model(options: Partial<OpenAIChatModelOptions> = {}): OpenAIChatModel {
    return new OpenAIChatModel({ baseURL: server.baseURL, apiKey: KEY, model: 'default-model', maxRetries: 0, timeout: 10_000, logger, ...options })
  }

  beforeEach(async () => {
    logged.length = 0
    server = await FakeOpenAIServer.start()
  })

  afterEach(async () => {
    await server.close()
    expect(server.openSockets).to.equal(0)
  })

  it('returns a text answer and sends model, messages, key; no tools key when there are none', async () => {
    server.reply({ body: completion({ content: 'Hello!' }) })
    const signal = new AbortController().signal
    const res = await model().generate(request({ system: 'Be brief.', signal }))
    expect(res).to.deep.equal({
      text: 'Hello!',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 10, outputTokens: 5 },
      model: 'test-model',
      id: 'chatcmpl-test',
    })
    expect(server.requests).to.have.length(1)
    const [req] = server.requests
    expect(req!.method).to.equal('POST')
    expect(req!.url).to.equal('/v1/chat/completions')
    expect(req!.headers.authorization).to.equal(`Bearer ${KEY}`)
    expect(req!.body).to.deep.equal({
      model: 'default-model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi there' },
      ],
    })
    // The adapter leaves no listener behind on the caller's signal (it lives for a whole run).
    expect(getEventListeners(signal, 'abort')).to.have.length(0)
  })

  it('uses the modelId of an `openai:<id>` ref instead of the configured model', async () => {
    server.reply({ body: completion({ content: 'ok' }) })
    await model().generate(request({ modelId: 'other-model' }))
    expect(server.requests[0]!.body.model).to.equal('other-model')
  })

  it('round-trips tool calls: decodes the call, then sends assistant tool_calls, the tool result and the tools schema', async () => {
    server.reply(
      { body: completion({ content: null, finishReason: 'tool_calls', toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: '{"city":"Paris"}' }] }) },
      { body: completion({ content: 'It is sunny in Paris.' }) },
    )
    const m = model()
    const first = await m.generate(request({ tools: [weatherTool] }))
    expect(first.finishReason).to.equal('tool-calls')
    expect(first.text).to.equal('')
    expect(first.toolCalls).to.deep.equal([{ id: 'call_abc', name: 'get_weather', input: { city: 'Paris' } }])

    const messages: Message[] = [
      { role: 'user', content: 'Hi there' },
      { role: 'assistant', content: '', toolCalls: first.toolCalls },
      { role: 'tool', toolCallId: 'call_abc', name: 'get_weather', content: 'sunny, 24°C' },
    ]
    const second = await m.generate(request({ messages, tools: [weatherTool] }))
    expect(second).to.include({ text: 'It is sunny in Paris.', finishReason: 'stop' })

    const body = server.requests[1]!.body
    expect(body.tools).to.deep.equal([{
      type: 'function',
      function: { name: 'get_weather', description: 'Current weather for a city.', parameters: weatherTool.parameters },
    }])
    expect(body.messages).to.deep.equal([
      { role: 'user', content: 'Hi there' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_abc', content: 'sunny, 24°C' },
    ])
  })

  it('keeps assistant text next to tool calls and marks failed tool results for the model', async () => {
    server.reply({ body: completion({ content: 'done' }) })
    await model().generate(request({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: 'Let me check.', toolCalls: [{ id: 'c1', name: 'get_weather', input: { city: 'Oslo' } }] },
        { role: 'tool', toolCallId: 'c1', name: 'get_weather', content: 'service unavailable', isError: true },
        { role: 'assistant', content: 'The service is down.' },
        { role: 'user', content: 'ok' },
      ],
    }))
    expect(server.requests[0]!.body.messages).to.deep.equal([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: 'Let me check.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'Error: service unavailable' },
      { role: 'assistant', content: 'The service is down.' },
      { role: 'user', content: 'ok' },
    ])
  })

  it('returns parallel tool calls of one response in order', async () => {
    server.reply({
      body: completion({
        finishReason: 'tool_calls',
        toolCalls: [
          { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { id: 'call_2', name: 'get_weather', arguments: '{"city":"Tokyo"}' },
          { id: 'call_3', name: 'get_time', arguments: '{}' },
        ],
      }),
    })
    const res = await model().generate(request({ tools: [weatherTool] }))
    expect(res.finishReason).to.equal('tool-calls')
    expect(res.toolCalls).to.deep.equal([
      { id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
      { id: 'call_2', name: 'get_weather', input: { city: 'Tokyo' } },
      { id: 'call_3', name: 'get_time', input: {} },
    ])
  })

  it('treats tool calls under finish_reason "stop" as tool calls, and fills in missing or repeated ids', async () => {
    server.reply({
      body: completion({
        finishReason: 'stop',
        toolCalls: [
          { id: '', name: 'get_weather', arguments: '{"city":"Rome"}' },
          { id: 'dup', name: 'get_weather', arguments: '' },
          { id: 'dup', name: 'get_weather', arguments: '"{\\"city\\":\\"Bern\\"}"' },
        ],
      }),
    })
    const res = await model().generate(request({ tools: [weatherTool] }))
    expect(res.finishReason).to.equal('tool-calls')
    const ids = res.toolCalls.map((call) => call.id)
    expect(new Set(ids).size).to.equal(3)
    expect(ids[0]).to.match(/^call_/)
    expect(res.toolCalls.map((call) => call.input)).to.deep.equal([{ city: 'Rome' }, {}, { city: 'Bern' }])
    expect(res.toolCalls.every((call) => call.invalidInput === undefined)).to.equal(true)
  })

  it('maps finish_reason length to length and keeps the partial text', async () => {
    server.reply({ body: completion({ content: 'The answer is', finishReason: 'length' }) })
    const res = await model().generate(request({ maxTokens: 3 }))
    expect(res).to.include({ text: 'The answer is', finishReason: 'length' })
    // Loopback is not api.openai.com, so `auto` picks the widely supported `max_tokens`.
    expect(server.requests[0]!.body.max_tokens).to.equal(3)
    expect(server.requests[0]!.body).to.not.have.property('max_completion_tokens')
  })

  it('sends max_completion_tokens, temperature and extra headers when configured', async () => {
    server.reply({ body: completion({ content: 'ok' }) })
    await model({ maxTokensParam: 'max_completion_tokens', temperature: 0.2, headers: { 'X-Title': 'cordis-subagents' } })
      .generate(request({ maxTokens: 64 }))
    const [req] = server.requests
    expect(req!.body).to.include({ max_completion_tokens: 64, temperature: 0.2 })
    expect(req!.body).to.not.have.property('max_tokens')
    expect(req!.headers['x-title']).to.equal('cordis-subagents')
  })

  it('sends no Authorization header when the key is empty (local servers)', async () => {
    server.reply({ body: completion({ content: 'ok' }) })
    const res = await model({ apiKey: '' }).generate(request())
    expect(res.text).to.equal('ok')
    expect(server.requests[0]!.headers).to.not.have.property('authorization')
  })

  it('maps message.refusal to refusal with the refusal as text', async () => {
    server.reply({ body: completion({ content: null, refusal: 'I can not help with that.', finishReason: 'stop' }) })
    const res = await model().generate(request())
    expect(res).to.include({ text: 'I can not help with that.', finishReason: 'refusal' })
  })

  it('maps finish_reason content_filter to refusal', async () => {
    server.reply({ body: completion({ content: 'Partial', finishReason: 'content_filter' }) })
    const res = await model().generate(request())
    expect(res).to.include({ text: 'Partial', finishReason: 'refusal' })
  })

  it('maps an unknown finish_reason to other, and a missing one to stop', async () => {
    server.reply(
      { body: completion({ content: 'hm', finishReason: 'weird_reason' }) },
      { body: completion({ content: 'fine', finishReason: null }) },
    )
    const m = model()
    expect((await m.generate(request())).finishReason).to.equal('other')
    expect(await m.generate(request())).to.include({ text: 'fine', finishReason: 'stop' })
  })

  it('reports malformed tool arguments in invalidInput (raw text quoted, truncated) instead of failing', async () => {
    const long = `{"city": "${'x'.repeat(1000)}`
    server.reply({
      body: completion({
        finishReason: 'tool_calls',
        toolCalls: [
          { id: 'bad', name: 'get_weather', arguments: '{"city": Paris}' },
          { id: 'long', name: 'get_weather', arguments: long },
          { id: 'arr', name: 'get_weather', arguments: '[1,2]' },
          { id: 'good', name: 'get_weather', arguments: '{"city":"Lima"}' },
        ],
      }),
    })
    const res = await model().generate(request({ tools: [weatherTool] }))
    expect(res.finishReason).to.equal('tool-calls')
    const [bad, longCall, arr, good] = res.toolCalls
    expect(bad).to.include({ id: 'bad', name: 'get_weather' })
    expect(bad!.input).to.deep.equal({})
    expect(bad!.invalidInput).to.be.a('string').and.include('not valid JSON').and.include('{"city": Paris}')
    expect(longCall!.invalidInput).to.be.a('string').and.include('{"city": "xxx')
    expect(longCall!.invalidInput!.length).to.be.lessThan(500)
    expect(arr!.invalidInput).to.include('must be a JSON object').and.include('[1,2]')
    expect(good).to.deep.equal({ id: 'good', name: 'get_weather', input: { city: 'Lima' } })

    // Sent back, an undecodable call carries `{}` as its arguments.
    server.reply({ body: completion({ content: 'ok' }) })
    await model().generate(request({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: '', toolCalls: [bad!] },
        { role: 'tool', toolCallId: 'bad', name: 'get_weather', content: bad!.invalidInput!, isError: true },
      ],
    }))
    expect(server.requests[1]!.body.messages[1].tool_calls[0].function.arguments).to.equal('{}')
  })

  it('tool arguments nested deeper than the body\'s bound (inside their JSON string) are invalidInput, and the call goes back as {}', async () => {
    const deep = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`
    const atBound = `${'{"a":'.repeat(255)}1${'}'.repeat(255)}`
    server.reply({
      body: completion({
        finishReason: 'tool_calls',
        toolCalls: [{ id: 'deep', name: 'get_weather', arguments: deep }, { id: 'ok', name: 'get_weather', arguments: atBound }],
      }),
    })
    const res = await model().generate(request({ tools: [weatherTool] }))
    const [tooDeep, fine] = res.toolCalls
    expect(tooDeep!.input).to.deep.equal({})
    expect(tooDeep!.invalidInput).to.include('nest deeper than 256 levels')
    expect(tooDeep!.invalidInput!.length).to.be.lessThan(500)
    expect(fine!.invalidInput).to.equal(undefined)
    // The transcript that holds the call can be sent again: the next request is made, the deep call as `{}`.
    server.reply({ body: completion({ content: 'ok' }) })
    const next = await model().generate(request({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: '', toolCalls: [tooDeep!, fine!] },
        { role: 'tool', toolCallId: 'deep', name: 'get_weather', content: tooDeep!.invalidInput!, isError: true },
        { role: 'tool', toolCallId: 'ok', name: 'get_weather', content: 'sunny' },
      ],
    }))
    expect(next.text).to.equal('ok')
    expect(server.requests[1]!.body.messages[1].tool_calls[0].function.arguments).to.equal('{}')
  })

  it('a usage count that is no whole non-negative number is 0; cached tokens are at most the prompt\'s', async () => {
    server.reply(
      { body: completion({ content: 'a', usage: { prompt_tokens: -1_000_000, completion_tokens: 2.5, total_tokens: 0 } }) },
      { body: completion({ content: 'b', usage: { prompt_tokens: 10, completion_tokens: '7', total_tokens: 17, prompt_tokens_details: { cached_tokens: 500 } } }) },
    )
    const m = model()
    expect((await m.generate(request())).usage).to.deep.equal({ inputTokens: 0, outputTokens: 0 })
    expect((await m.generate(request())).usage).to.deep.equal({ inputTokens: 10, outputTokens: 0, cachedInputTokens: 10 })
  })

  it('maps usage, including cached prompt tokens; omits usage the server did not send', async () => {
    server.reply(
      { body: completion({ content: 'a', usage: { prompt_tokens: 1234, completion_tokens: 56, total_tokens: 1290, prompt_tokens_details: { cached_tokens: 1000 } } }) },
      { body: completion({ content: 'b', usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }) },
      { body: completion({ content: 'c', usage: null }) },
    )
    const m = model()
    expect((await m.generate(request())).usage).to.deep.equal({ inputTokens: 1234, outputTokens: 56, cachedInputTokens: 1000 })
    expect((await m.generate(request())).usage).to.deep.equal({ inputTokens: 7, outputTokens: 3 })
    expect(await m.generate(request())).to.not.have.property('usage')
  })

  it('ends with error and a diagnostic naming endpoint and HTTP 401, without the key', async () => {
    server.reply((req, res) => sendJson(res, 401, apiError(`Incorrect API key provided: ${req.headers.authorization}`, 'invalid_request_error', 'invalid_api_key')))
    const res = await model().generate(request())
    expect(res.finishReason).to.equal('error')
    expect(res.text).to.equal('')
    expect(res.toolCalls).to.deep.equal([])
    expect(res.diagnostic).to.include(server.baseURL).and.include('HTTP 401').and.include('apiKey')
    expect(res.diagnostic).to.not.include(KEY)
    expect(res.diagnostic).to.not.include('DISTINCTIVE')
    expect(server.requests).to.have.length(1)
  })

  it('retries a 500 and succeeds (the server sees two requests)', async () => {
    server.reply(
      { status: 500, body: apiError('upstream overloaded', 'server_error'), headers: { 'retry-after-ms': '0' } },
      { body: completion({ content: 'second time lucky' }) },
    )
    const res = await model({ maxRetries: 2 }).generate(request())
    expect(res).to.include({ text: 'second time lucky', finishReason: 'stop' })
    expect(server.requests).to.have.length(2)
    expect(server.requests[1]!.body).to.deep.equal(server.requests[0]!.body)
  })

  it('a retry the SDK makes itself waits at most the attempt\'s timeout, whatever Retry-After says (days, a date, a number past the timer)', async () => {
    const warnings: string[] = []
    const warned = (warning: Error) => warnings.push(warning.name)
    process.on('warning', warned)
    try {
      const announced: Array<Record<string, string>> = [{ 'retry-after': '2000000' }, { 'retry-after-ms': '2000000000' }]
      announced.push({ 'retry-after': new Date(Date.now() + 20 * 86_400_000).toUTCString() }, { 'retry-after': '1e12' })
      for (const headers of announced) {
        server.requests.length = 0
        server.reply({ status: 500, body: apiError('busy', 'server_error'), headers }, { body: completion({ content: 'after the wait' }) })
        const res = await settlesWithin(model({ maxRetries: 1, timeout: 800 }).generate(request()), `the retry after ${JSON.stringify(headers)}`)
        expect(res, JSON.stringify(headers)).to.include({ text: 'after the wait' })
        expect(server.requests).to.have.length(2)
      }
      // With the model gate too: its 429s and 503s are the gate's; a 408 is still the SDK's.
      server.requests.length = 0
      server.reply({ status: 408, body: apiError('slow', 'timeout'), headers: { 'retry-after': '999999' } }, { body: completion({ content: 'gated' }) })
      const gated = await settlesWithin(model({ maxRetries: 1, timeout: 800 }).generate(request({ rateLimits: 'gate' })), 'the gated retry')
      expect(gated).to.include({ text: 'gated' })
    } finally {
      process.off('warning', warned)
    }
    expect(warnings).to.not.include('TimeoutOverflowWarning')
  })

  it('gives up after maxRetries and says how many attempts were made', async () => {
    const fail = { status: 503, body: apiError('down for maintenance', 'server_error'), headers: { 'retry-after-ms': '0' } }
    server.reply(fail, fail)
    const res = await model({ maxRetries: 1 }).generate(request())
    expect(res.finishReason).to.equal('error')
    expect(res.diagnostic).to.include('HTTP 503').and.include('after 2 attempts').and.include('down for maintenance')
    expect(server.requests).to.have.length(2)
  })

  it('never puts the API key (or a secret header) in a diagnostic or a log line, whatever the failure', async () => {
    const echo = (status: number) => (req: { headers: Record<string, unknown> }, res: Parameters<typeof sendJson>[0]) =>
      sendJson(res, status, apiError(`auth=${String(req.headers.authorization)} key=${String(req.headers['x-api-key'])} raw=${KEY}`))
    const statuses = [400, 401, 403, 404, 429, 500]
    server.reply(...statuses.map(echo))
    const m = model({ headers: { 'x-api-key': 'hdr-secret-0123456789' } })
    const diagnostics: string[] = []
    for (const status of statuses) {
      const res = await m.generate(request())
      expect(res.finishReason).to.equal('error')
      expect(res.diagnostic).to.include(`HTTP ${status}`).and.include(server.baseURL)
      diagnostics.push(res.diagnostic!)
    }
    expect(diagnostics.find((d) => d.includes('HTTP 404'))).to.include('"model"')
    expect(diagnostics.find((d) => d.includes('HTTP 429'))).to.include('Rate limited')

    const refused = await model({ baseURL: `http://127.0.0.1:${await deadPort()}/v1` }).generate(request())
    expect(refused.finishReason).to.equal('error')
    expect(refused.diagnostic).to.include('ECONNREFUSED').and.include('127.0.0.1')
    diagnostics.push(refused.diagnostic!)

    for (const text of [...diagnostics, ...logged]) {
      expect(text).to.not.include(KEY)
      expect(text).to.not.include('DISTINCTIVE')
      expect(text).to.not.include('hdr-secret-0123456789')
    }
    expect(logged.some((line) => line.includes('HTTP 401'))).to.equal(true)
  })

  it('reports a refused connection with the endpoint', async () => {
    const baseURL = `http://127.0.0.1:${await deadPort()}/v1`
    const res = await model({ baseURL }).generate(request())
    expect(res.finishReason).to.equal('error')
    expect(res.diagnostic).to.include(baseURL).and.include('connection failed').and.include('ECONNREFUSED')
  })

  it('reports a timeout when the server does not answer in time', async () => {
    server.reply(() => { /* hold the request until the test closes the server */ })
    const res = await model({ timeout: 150 }).generate(request())
    expect(res.finishReason).to.equal('error')
    expect(res.diagnostic).to.include(server.baseURL).and.include('timeout').and.include('150 ms')
    expect(res.diagnostic).to.not.include(KEY)
  })

  it('reports a body that is not a chat completion', async () => {
    server.reply({ body: { hello: 'world' } })
    const res = await model().generate(request())
    expect(res.finishReason).to.equal('error')
    expect(res.diagnostic).to.include('unusable response').and.include(server.baseURL)
  })

  it('aborts a request the server is holding: rejects as an abort and the server sees the socket close', async () => {
    server.reply(() => { /* hold */ })
    const controller = new AbortController()
    const pending = model().generate(request({ signal: controller.signal }))
    await server.received(1)
    controller.abort()
    const error = await pending.then(() => undefined, (e: unknown) => e)
    expect(error).to.be.instanceOf(Error)
    expect((error as Error).name).to.equal('AbortError')
    await server.requests[0]!.socketClosed
    expect(getEventListeners(controller.signal, 'abort')).to.have.length(0)
  })

  it('rethrows the abort reason when the signal carries one', async () => {
    server.reply(() => { /* hold */ })
    const controller = new AbortController()
    const pending = model().generate(request({ signal: controller.signal }))
    await server.received(1)
    const reason = new Error('user pressed stop')
    controller.abort(reason)
    const error = await pending.then(() => undefined, (e: unknown) => e)
    expect(error).to.equal(reason)
    await server.requests[0]!.socketClosed
  })

  it('does not send anything for an already aborted signal', async () => {
    const controller = new AbortController()
    controller.abort()
    const error = await model().generate(request({ signal: controller.signal })).then(() => undefined, (e: unknown) => e)
    expect((error as Error).name).to.equal('AbortError')
    expect(server.requests).to.have.length(0)
  })

  it('aborts during a retry back-off without sending the retry', async () => {
    server.reply((_req, res) => sendJson(res, 500, apiError('busy', 'server_error'), { 'retry-after-ms': '300' }))
    // The client holds the 500 (its headers) once the fetch it goes through resolves; from there
    // the SDK only decides to retry and starts its back-off.
    let fetches = 0
    let responded!: () => void
    const response = new Promise<void>((resolve) => responded = resolve)
    const fetchSpy: typeof fetch = async (input, init) => {
      fetches++
      const res = await fetch(input, init)
      responded()
      return res
    }
    const controller = new AbortController()
    const pending = model({ maxRetries: 3, fetch: fetchSpy }).generate(request({ signal: controller.signal }))
    await response
    await new Promise((resolve) => setImmediate(resolve))
    controller.abort()
    const error = await pending.then(() => undefined, (e: unknown) => e)
    expect((error as Error).name).to.equal('AbortError')
    // A retry can only be shown absent by waiting past the back-off the server announced (300 ms);
    // the window is that plus a generous margin. Nothing may be fetched or sent again.
    await delay(300 + 500)
    expect(fetches).to.equal(1)
    expect(server.requests).to.have.length(1)
  })
})
