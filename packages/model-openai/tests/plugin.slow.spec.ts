import { Context } from 'cordis'
import { expect } from 'chai'
import { z } from 'zod'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { type AgentEvent } from '@cordis-subagents/agent'
import * as ModelOpenAI from '@cordis-subagents/model-openai'
import { DEFAULT_MODEL } from '@cordis-subagents/model-openai/testing'
import { apiError, completion, FakeOpenAIServer, sendJson } from './fixtures/server.js'

const FAILED = 3
const KEY = 'sk-test-DISTINCTIVE-e2e-4c1d8b7a9f'

describe('model-openai plugin', () => {
  describe('loader shape', () => {
    it('is a namespace plugin with name, reusable, inject, Config and apply, and no default export', async () => {
      const mod: Record<string, unknown> = await import('@cordis-subagents/model-openai')
      expect(mod.name).to.equal('model-openai')
      expect(mod.reusable).to.equal(true)
      expect(mod.inject).to.deep.equal(['agents'])
      expect(mod.Config).to.be.a('function')
      expect(mod.apply).to.be.a('function')
      expect(Object.keys(mod)).to.not.include('default')
    })

    it('exports the plugin, the model class and its error; test hooks only from ./testing', async () => {
      const mod = await import('@cordis-subagents/model-openai')
      expect(Object.keys(mod).sort()).to.deep.equal(['Config', 'ModelOpenAIError', 'OpenAIChatModel', 'apply', 'inject', 'name', 'resolveConfig', 'reusable'])
      const testing = await import('@cordis-subagents/model-openai/testing')
      expect(Object.keys(testing).sort()).to.deep.equal(['ArrayCappingScanner', 'DEFAULT_MODEL', 'MAX_JSON_DEPTH', 'RESPONSE_LIMITS', 'fromCompletion', 'retryAfterMs'])
    })

    it('has Config defaults and descriptions for every key', () => {
      const config = ModelOpenAI.Config({})
      expect(config).to.include({ name: 'openai', model: DEFAULT_MODEL, timeout: 600_000, maxRetries: 2, maxTokensParam: 'auto' })
      expect(config.apiKey).to.equal(undefined)
      expect(config.baseURL).to.equal(undefined)
      const dict = (ModelOpenAI.Config as unknown as { dict: Record<string, { meta: { description?: unknown } }> }).dict
      expect(config.maxResponseBytes).to.equal(16 * 1024 * 1024)
      for (const key of ['name', 'baseURL', 'apiKey', 'model', 'timeout', 'maxResponseBytes', 'maxRetries', 'temperature', 'headers', 'maxTokensParam']) {
        expect(dict[key]?.meta.description, key).to.be.ok
      }
    })
  })

  describe('resolveConfig', () => {
    const base = () => ModelOpenAI.Config({})

    it('falls back to OPENAI_BASE_URL, OPENAI_API_KEY, then the SDK default endpoint', () => {
      expect(ModelOpenAI.resolveConfig(base(), { OPENAI_BASE_URL: 'http://gw.local:8080/v1', OPENAI_API_KEY: 'env-key' }))
        .to.include({ baseURL: 'http://gw.local:8080/v1', apiKey: 'env-key', name: 'openai' })
      expect(ModelOpenAI.resolveConfig(base(), {})).to.include({ baseURL: 'https://api.openai.com/v1', apiKey: '' })
    })

    it('prefers configured values; an explicit empty apiKey means no key even when OPENAI_API_KEY is set', () => {
      const resolved = ModelOpenAI.resolveConfig({ ...base(), baseURL: 'http://localhost:11434/v1', apiKey: '' }, { OPENAI_BASE_URL: 'http://other/v1', OPENAI_API_KEY: 'env-key' })
      expect(resolved).to.include({ baseURL: 'http://localhost:11434/v1', apiKey: '' })
    })

    it('rejects bad values with an INVALID_CONFIG error naming the key', () => {
      const cases: Array<[Partial<ModelOpenAI.Config>, string]> = [
        [{ name: 'open:ai' }, '"name"'],
        [{ name: '' }, '"name"'],
        [{ baseURL: 'ftp://example.com/v1' }, '"baseURL"'],
        [{ baseURL: 'not a url' }, '"baseURL"'],
        [{ model: '  ' }, '"model"'],
        [{ headers: { 'bad header': 'x' } }, '"headers"'],
        [{ headers: { 'X-Ok': 'line\nbreak' } }, '"headers"'],
      ]
      for (const [patch, key] of cases) {
        let caught: unknown
        try {
          ModelOpenAI.resolveConfig({ ...base(), ...patch }, {})
        } catch (error) {
          caught = error
        }
        expect(caught, key).to.be.instanceOf(ModelOpenAI.ModelOpenAIError)
        expect((caught as ModelOpenAI.ModelOpenAIError).code).to.equal('INVALID_CONFIG')
        expect((caught as Error).message).to.include(key)
      }
    })
  })

  describe('through ctx.agents', () => {
    let ctx: Context
    let errors: Error[]
    let server: FakeOpenAIServer
    const savedEnv = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL }

    beforeEach(async () => {
      delete process.env.OPENAI_API_KEY
      delete process.env.OPENAI_BASE_URL
      server = await FakeOpenAIServer.start()
      ctx = new Context()
      errors = []
      ctx.on('internal/error', (error: Error) => { errors.push(error) })
      ctx.plugin(ToolRegistry)
      ctx.plugin(AgentRuntime)
      await ctx.start()
    })

    afterEach(async () => {
      await ctx.stop()
      await server.close()
      restoreEnv('OPENAI_API_KEY', savedEnv.key)
      restoreEnv('OPENAI_BASE_URL', savedEnv.url)
    })

    function restoreEnv(name: string, value: string | undefined) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }

    async function load(config: Partial<ModelOpenAI.Config> = {}) {
      const fork = ctx.plugin(ModelOpenAI, { baseURL: server.baseURL, apiKey: KEY, model: 'default-model', maxRetries: 0, ...config })
      await ctx.lifecycle.flush()
      return fork
    }

    const weatherCalls: unknown[] = []
    function registerWeather() {
      weatherCalls.length = 0
      ctx.plugin({
        name: 'weather-tool',
        inject: ['tools'],
        apply(ctx: Context) {
          ctx.tools.register({
            name: 'get_weather',
            description: 'Current weather for a city.',
            input: z.object({ city: z.string().describe('City name') }),
            execute: ({ city }) => {
              weatherCalls.push(city)
              return { content: `${city}: sunny, 24°C` }
            },
          })
        },
      })
    }

    it('runs a tool-call round trip: the model calls a real ctx.tools tool and answers with its result', async () => {
      registerWeather()
      await load()
      server.reply(
        { body: completion({ finishReason: 'tool_calls', toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }], usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 } }) },
        { body: completion({ content: 'It is sunny in Paris (24°C).', usage: { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49, prompt_tokens_details: { cached_tokens: 16 } } }) },
      )
      const agent = ctx.agents.create({ model: 'openai:other-model', persona: 'You are a weather bot.' })
      const events: AgentEvent[] = []
      const result = await agent.run('Weather in Paris?', { onEvent: (event) => events.push(event) })

      expect(result).to.deep.include({ text: 'It is sunny in Paris (24°C).', stopReason: 'completed', steps: 2, toolCalls: 1 })
      expect(result.usage).to.deep.equal({ inputTokens: 60, outputTokens: 17, cachedInputTokens: 16 })
      expect(weatherCalls).to.deep.equal(['Paris'])
      expect(events.filter((e) => e.type === 'tool-result')).to.have.length(1)

      expect(server.requests).to.have.length(2)
      for (const req of server.requests) {
        expect(req.body.model).to.equal('other-model')
        expect(req.headers.authorization).to.equal(`Bearer ${KEY}`)
        expect(req.body.tools).to.deep.equal([{
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Current weather for a city.',
            parameters: ctx.tools.view().list()[0]!.parameters,
          },
        }])
      }
      expect(server.requests[0]!.body.tools[0].function.parameters).to.deep.include({
        type: 'object',
        properties: { city: { type: 'string', description: 'City name' } },
        required: ['city'],
      })
      expect(server.requests[1]!.body.messages).to.deep.equal([
        { role: 'system', content: 'You are a weather bot.' },
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_w1', content: 'Paris: sunny, 24°C' },
      ])
    })

    it('runs parallel tool calls of one response and sends every result back in call order', async () => {
      registerWeather()
      await load()
      server.reply(
        { body: completion({ finishReason: 'tool_calls', toolCalls: [
          { id: 'c_a', name: 'get_weather', arguments: '{"city":"Oslo"}' },
          { id: 'c_b', name: 'get_weather', arguments: '{"city":"Lima"}' },
        ] }) },
        { body: completion({ content: 'Oslo and Lima are sunny.' }) },
      )
      const result = await ctx.agents.create({ model: 'openai' }).run('Weather in Oslo and Lima?')
      expect(result).to.include({ stopReason: 'completed', toolCalls: 2, text: 'Oslo and Lima are sunny.' })
      expect([...weatherCalls].sort()).to.deep.equal(['Lima', 'Oslo'])
      expect(server.requests[0]!.body.model).to.equal('default-model')
      expect(server.requests[1]!.body.messages.slice(-2)).to.deep.equal([
        { role: 'tool', tool_call_id: 'c_a', content: 'Oslo: sunny, 24°C' },
        { role: 'tool', tool_call_id: 'c_b', content: 'Lima: sunny, 24°C' },
      ])
    })

    it('answers malformed tool arguments with an error result for the model instead of crashing', async () => {
      registerWeather()
      await load()
      server.reply(
        { body: completion({ finishReason: 'tool_calls', toolCalls: [{ id: 'c_bad', name: 'get_weather', arguments: '{"city": Paris' }] }) },
        { body: completion({ content: 'Sorry, let me retry later.' }) },
      )
      const result = await ctx.agents.create({ model: 'openai' }).run('Weather?')
      expect(result).to.include({ stopReason: 'completed', text: 'Sorry, let me retry later.' })
      expect(weatherCalls).to.deep.equal([])
      const toolMessage = server.requests[1]!.body.messages.at(-1)
      expect(toolMessage.role).to.equal('tool')
      expect(toolMessage.tool_call_id).to.equal('c_bad')
      expect(toolMessage.content).to.include('Invalid arguments').and.include('{"city": Paris')
    })

    it('ends the run as error on HTTP 401 with a diagnostic naming endpoint and status, never the key', async () => {
      await load()
      server.reply((req, res) => sendJson(res, 401, apiError(`Incorrect API key provided: ${req.headers.authorization}`)))
      const result = await ctx.agents.create({ model: 'openai' }).run('Hello?')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include(server.baseURL).and.include('HTTP 401')
      expect(result.diagnostic).to.not.include(KEY)
      expect(result.diagnostic).to.not.include('DISTINCTIVE')
    })

    it('retries a 500 and completes; the server sees two requests', async () => {
      await load({ maxRetries: 1 })
      server.reply(
        { status: 500, body: apiError('boom', 'server_error'), headers: { 'retry-after-ms': '0' } },
        { body: completion({ content: 'recovered' }) },
      )
      const result = await ctx.agents.create({ model: 'openai' }).run('Hello?')
      expect(result).to.include({ stopReason: 'completed', text: 'recovered' })
      expect(server.requests).to.have.length(2)
    })

    it('maps length to max-tokens (keeping the partial text) and refusal to refusal', async () => {
      await load()
      server.reply(
        { body: completion({ content: 'Once upon a', finishReason: 'length' }) },
        { body: completion({ content: null, refusal: 'I will not do that.' }) },
      )
      const truncated = await ctx.agents.create({ model: 'openai', maxTokens: 4 }).run('Tell a story')
      expect(truncated).to.include({ stopReason: 'max-tokens', text: 'Once upon a' })
      expect(server.requests[0]!.body.max_tokens).to.equal(4)
      const refused = await ctx.agents.create({ model: 'openai' }).run('Do something bad')
      expect(refused).to.include({ stopReason: 'refusal', text: 'I will not do that.' })
    })

    it('aborts a run while the server holds the request; the server sees the connection close', async () => {
      await load()
      server.reply(() => { /* hold */ })
      const controller = new AbortController()
      const running = ctx.agents.create({ model: 'openai' }).run('Take your time', { signal: controller.signal })
      await server.received(1)
      controller.abort()
      const result = await running
      expect(result.stopReason).to.equal('aborted')
      await server.requests[0]!.socketClosed
    })

    it('takes apiKey and baseURL from the environment at load time when not configured', async () => {
      process.env.OPENAI_API_KEY = 'env-key-123456'
      process.env.OPENAI_BASE_URL = server.baseURL
      ctx.plugin(ModelOpenAI, { model: 'env-model', maxRetries: 0 })
      await ctx.lifecycle.flush()
      server.reply({ body: completion({ content: 'from env' }) })
      const result = await ctx.agents.create({ model: 'openai' }).run('Hi')
      expect(result).to.include({ stopReason: 'completed', text: 'from env' })
      expect(server.requests[0]!.headers.authorization).to.equal('Bearer env-key-123456')
      expect(server.requests[0]!.body.model).to.equal('env-model')
    })

    it('loads twice under two names for two endpoints; unloading one removes only its model', async () => {
      const local = await FakeOpenAIServer.start()
      try {
        await load({ name: 'openai' })
        const localFork = ctx.plugin(ModelOpenAI, { name: 'local', baseURL: local.baseURL, apiKey: '', model: 'llama3.2', maxRetries: 0 })
        await ctx.lifecycle.flush()
        expect(ctx.agents.modelNames().sort()).to.deep.equal(['local', 'openai'])

        server.reply({ body: completion({ content: 'hosted' }) })
        local.reply({ body: completion({ content: 'local default' }) }, { body: completion({ content: 'local qwen' }) })
        expect((await ctx.agents.create({ model: 'openai' }).run('a')).text).to.equal('hosted')
        expect((await ctx.agents.create({ model: 'local' }).run('b')).text).to.equal('local default')
        expect((await ctx.agents.create({ model: 'local:qwen2.5:7b' }).run('c')).text).to.equal('local qwen')
        expect(server.requests).to.have.length(1)
        expect(local.requests.map((r) => r.body.model)).to.deep.equal(['llama3.2', 'qwen2.5:7b'])
        expect(local.requests[0]!.headers).to.not.have.property('authorization')

        localFork.dispose()
        expect(ctx.agents.modelNames()).to.deep.equal(['openai'])
        const gone = await ctx.agents.create({ model: 'local' }).run('d')
        expect(gone.stopReason).to.equal('error')
        expect(gone.diagnostic).to.include('Unknown model')
        expect(local.requests).to.have.length(2)
      } finally {
        await local.close()
      }
    })

    it('re-registers with the new endpoint when its config is updated', async () => {
      const other = await FakeOpenAIServer.start()
      try {
        const fork = await load()
        fork.update({ baseURL: other.baseURL, apiKey: KEY, model: 'default-model', maxRetries: 0 })
        await ctx.lifecycle.flush()
        other.reply({ body: completion({ content: 'moved' }) })
        expect((await ctx.agents.create({ model: 'openai' }).run('x')).text).to.equal('moved')
        expect(server.requests).to.have.length(0)
      } finally {
        await other.close()
      }
    })

    it('fails only itself at load on bad config, with a message naming the key', async () => {
      const schemaFork = ctx.plugin(ModelOpenAI, { baseURL: server.baseURL, timeout: 'soon' as unknown as number })
      const urlFork = ctx.plugin(ModelOpenAI, { name: 'bad-url', baseURL: 'ftp://example.com' })
      const nameFork = ctx.plugin(ModelOpenAI, { name: 'has:colon', baseURL: server.baseURL })
      const userinfoFork = ctx.plugin(ModelOpenAI, { name: 'userinfo', baseURL: `http://bob:pa55word@127.0.0.1:${server.port}/v1` })
      await ctx.lifecycle.flush()
      expect(userinfoFork.status).to.equal(FAILED)
      expect(errors.map((e) => e.message).join('\n')).to.include('must not contain user info').and.not.include('pa55word')
      expect(schemaFork.status).to.equal(FAILED)
      expect(urlFork.status).to.equal(FAILED)
      expect(nameFork.status).to.equal(FAILED)
      const messages = errors.map((error) => error.message)
      expect(messages.some((m) => m.includes('timeout'))).to.equal(true)
      expect(messages.some((m) => m.includes('"baseURL"') && m.includes('ftp://example.com'))).to.equal(true)
      expect(messages.some((m) => m.includes('"name"') && m.includes('has:colon'))).to.equal(true)
      expect(ctx.agents.modelNames()).to.deep.equal([])

      // The app keeps running: a good load next to them works.
      await load({ name: 'good' })
      expect(ctx.agents.modelNames()).to.deep.equal(['good'])
    })

    it('fails only itself at load for temperature NaN and a baseURL fragment (the schema lets NaN through)', async () => {
      const nanFork = ctx.plugin(ModelOpenAI, { name: 'nan', baseURL: server.baseURL, temperature: Number.NaN })
      const hashFork = ctx.plugin(ModelOpenAI, { name: 'hash', baseURL: `${server.baseURL}#x` })
      await ctx.lifecycle.flush()
      expect(nanFork.status).to.equal(FAILED)
      expect(hashFork.status).to.equal(FAILED)
      const messages = errors.map((error) => error.message)
      expect(messages.some((m) => m.includes('temperature must be a number from 0 to 2'))).to.equal(true)
      expect(messages.some((m) => m.includes('"baseURL"') && m.includes('fragment'))).to.equal(true)
      expect(ctx.agents.modelNames()).to.deep.equal([])
    })

    it('fails a second load under a taken name without touching the first', async () => {
      await load()
      const dup = await load()
      expect(dup.status).to.equal(FAILED)
      expect(errors.map((e) => e.message).join('\n')).to.include('"openai" is already registered')
      server.reply({ body: completion({ content: 'still here' }) })
      expect((await ctx.agents.create({ model: 'openai' }).run('x')).text).to.equal('still here')
    })
  })
})
