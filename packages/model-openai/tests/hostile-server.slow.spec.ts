// Item-by-item tests of the model plugin against slow, odd and hostile OpenAI-compatible servers.
import { expect } from 'chai'
import type { GenerateRequest } from '@cordis-subagents/agent'
import { OpenAIChatModel, type OpenAIChatModelOptions, resolveConfig } from '@cordis-subagents/model-openai'
import { completion, FakeOpenAIServer, sendJson } from './fixtures/server.js'
import { recordingLogger } from './fixtures/logger.js'

const KEY = 'sk-test-DISTINCTIVE-7f3a9c2e51b84d06'

function request(overrides: Partial<GenerateRequest> = {}): GenerateRequest {
  return { messages: [{ role: 'user', content: 'Hi' }], tools: [], signal: new AbortController().signal, ...overrides }
}

describe('OpenAIChatModel against hostile servers', () => {
  let server: FakeOpenAIServer
  const { logged, logger } = recordingLogger()
  function model(options: Partial<OpenAIChatModelOptions> = {}): OpenAIChatModel {
    return new OpenAIChatModel({ baseURL: server.baseURL, apiKey: KEY, model: 'm', maxRetries: 0, timeout: 10_000, logger, ...options })
  }

  beforeEach(async () => {
    logged.length = 0
    server = await FakeOpenAIServer.start()
  })
  afterEach(async () => {
    await server.close()
    expect(server.openSockets).to.equal(0)
  })

  describe('timeout covers the whole attempt', () => {
    it('ends a call whose server sends headers and then one byte per second', async () => {
      let ticker: NodeJS.Timeout | undefined
      server.reply((req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.flushHeaders()
        const body = JSON.stringify(completion({ content: 'x'.repeat(200) }))
        let sent = 0
        ticker = setInterval(() => { if (sent < body.length) res.write(body[sent++]) }, 200)
        void req.socketClosed.then(() => clearInterval(ticker))
      })
      const started = Date.now()
      const res = await model({ timeout: 800 }).generate(request())
      clearInterval(ticker)
      // Without the fix the call lasts until the whole body has trickled in (40+ s here).
      expect(Date.now() - started).to.be.below(8_000)
      expect(res.finishReason).to.equal('error')
      expect(res.diagnostic).to.include('no complete response within 800 ms').and.include('body was still arriving')
      await server.requests[0]!.socketClosed
    })

    it('still reports a server that never sends headers as a timeout', async () => {
      server.reply(() => { /* hold */ })
      const res = await model({ timeout: 300 }).generate(request())
      expect(res.diagnostic).to.include('300 ms').and.include('timeout')
    })

    it('rejects timeouts above setTimeout\'s ceiling at construction and in the plugin config', () => {
      expect(() => model({ timeout: 2 ** 31 })).to.throw(/timeout must be an integer from 1 to 2147483647 ms, got 2147483648/)
      expect(() => resolveConfig({ timeout: 2 ** 31 } as never, {})).to.throw(/config\.timeout must be an integer from 1 to 2147483647 ms/)
    })
  })

  describe('choices beyond the first', () => {
    it('merges tool calls a server splits across choices, in order', async () => {
      const body = completion({ content: null, finishReason: 'tool_calls', toolCalls: [{ id: 'a', name: 'subagent', arguments: '{"prompt":"one"}' }] })
      const second = completion({ content: null, finishReason: 'tool_calls', toolCalls: [{ id: 'b', name: 'subagent_acp', arguments: '{"prompt":"two"}' }] })
      ;(body.choices as unknown[]).push({ ...(second.choices as Array<Record<string, unknown>>)[0], index: 1 })
      server.reply({ body })
      const res = await model().generate(request())
      expect(res.finishReason).to.equal('tool-calls')
      expect(res.toolCalls).to.deep.equal([
        { id: 'a', name: 'subagent', input: { prompt: 'one' } },
        { id: 'b', name: 'subagent_acp', input: { prompt: 'two' } },
      ])
    })

    it('keeps merged ids unique when two choices reuse one id', async () => {
      const body = completion({ content: 'x', toolCalls: [{ id: 'call_0', name: 't', arguments: '{}' }] })
      const other = completion({ toolCalls: [{ id: 'call_0', name: 't', arguments: '{"n":2}' }] })
      ;(body.choices as unknown[]).push((other.choices as unknown[])[0])
      server.reply({ body })
      const res = await model().generate(request())
      expect(res.toolCalls.map((call) => call.id)).to.have.length(2)
      expect(new Set(res.toolCalls.map((call) => call.id)).size).to.equal(2)
      expect(res.text).to.equal('x')
    })
  })

  describe('credentials never reach a diagnostic or a log line', () => {
    it('rejects user info in baseURL with a clear INVALID_CONFIG error (plugin config and direct use)', () => {
      const baseURL = `http://alice:hunter2-pass@127.0.0.1:${server.port}/v1`
      const thrown = (run: () => unknown) => {
        try {
          run()
        } catch (error) {
          return error as Error & { code?: string }
        }
        throw new Error('expected a throw')
      }
      expect(thrown(() => resolveConfig({ baseURL } as never, {})).message).to.include('user info').and.not.include('hunter2')
      expect(() => resolveConfig({} as never, { OPENAI_BASE_URL: baseURL })).to.throw(/OPENAI_BASE_URL/)
      let message = ''
      try {
        model({ baseURL })
      } catch (error) {
        message = (error as Error).message
        expect((error as { code?: string }).code).to.equal('INVALID_CONFIG')
      }
      expect(message).to.include('user info').and.not.include('hunter2')
    })

    it('redacts a non-sk key echoed by the server, query values of baseURL, and key-shaped strings', async () => {
      const key = 'live_9QxZ-NOTSK'
      const queryKey = 'Q-SECRET-4821'
      server.reply({
        status: 401,
        body: { error: { message: `Invalid key ${key}; also tried ${queryKey} and gsk_AbCdEfGh12345678ijklMNOP and xk-live-9f8e****1706 at https://h/v1?key=${queryKey}&x=1` } },
      })
      const res = await model({ apiKey: key, baseURL: `${server.baseURL}?key=${queryKey}` }).generate(request())
      expect(server.requests[0]!.url).to.include(`key=${queryKey}`)
      expect(res.diagnostic).to.include('HTTP 401').and.include('[redacted]')
      for (const text of [res.diagnostic!, ...logged]) {
        expect(text).to.not.include(key)
        expect(text).to.not.include(queryKey)
        expect(text).to.not.include('gsk_AbCdEfGh12345678ijklMNOP')
        expect(text).to.not.include('9f8e****1706')
      }
    })

    it('redacts a key or header secret configured with surrounding whitespace, as fetch sends it (trimmed)', async () => {
      // A key read from a file (`$(cat key.txt)`, a secret mount) often ends in a newline; fetch sends it trimmed.
      const key = 'live_TRAILING-77'
      const header = 'hdr-TRIMMED-88'
      server.reply((req, res) => sendJson(res, 401, {
        error: { message: `Incorrect API key ${String(req.headers.authorization)} / ${String(req.headers['x-api-key'])}` },
      }))
      const res = await model({ apiKey: `${key}\n`, headers: { 'X-Api-Key': `\t${header} \r\n` } }).generate(request())
      expect(server.requests[0]!.headers.authorization).to.equal(`Bearer ${key}`)
      expect(res.diagnostic).to.include('HTTP 401').and.include('[redacted]')
      for (const text of [res.diagnostic!, ...logged]) expect(text).to.not.include(key).and.not.include(header)
    })

    it('keeps OPENAI_LOG=debug lines free of the key, header secrets and query values', async () => {
      const saved = process.env.OPENAI_LOG
      process.env.OPENAI_LOG = 'debug'
      try {
        const key = 'plainkey-0001'
        server.reply({ status: 500, body: { error: { message: `boom ${key}` } } }, { body: completion({ content: 'ok' }) })
        const m = model({ apiKey: key, maxRetries: 1, baseURL: `${server.baseURL}?api-key=QSECRET77`, headers: { 'X-Goog-Api-Key': 'hdr-secret-xyz' } })
        const res = await m.generate(request())
        expect(res.text).to.equal('ok')
      } finally {
        if (saved === undefined) delete process.env.OPENAI_LOG
        else process.env.OPENAI_LOG = saved
      }
      expect(logged.some((line) => line.includes('sending request'))).to.equal(true)
      expect(logged.some((line) => line.includes('/chat/completions'))).to.equal(true)
      for (const line of logged) {
        expect(line).to.not.include('plainkey-0001')
        expect(line).to.not.include('QSECRET77')
        expect(line).to.not.include('hdr-secret-xyz')
      }
    })
  })

  describe('config residue', () => {
    const thrown = (run: () => unknown): Error & { code?: string } => {
      try {
        run()
      } catch (error) {
        return error as Error & { code?: string }
      }
      throw new Error('expected a throw')
    }

    it('keeps a baseURL query on every request, after the path (the server sees /v1/chat/completions?…)', async () => {
      server.reply({ status: 500, body: { error: { message: 'once more' } } }, { body: completion({ content: 'ok' }) })
      const res = await model({ maxRetries: 1, baseURL: `${server.baseURL}?api-version=2024-06-01&key=Q-SECRET-1` }).generate(request())
      expect(res.text).to.equal('ok')
      expect(server.requests.map((r) => r.url)).to.deep.equal([
        '/v1/chat/completions?api-version=2024-06-01&key=Q-SECRET-1',
        '/v1/chat/completions?api-version=2024-06-01&key=Q-SECRET-1',
      ])
    })

    it('keeps the query when baseURL ends with a slash, and sends a plain baseURL without one', async () => {
      server.reply({ body: completion({ content: 'a' }) }, { body: completion({ content: 'b' }) })
      await model({ baseURL: `${server.baseURL}/?key=v` }).generate(request())
      await model().generate(request())
      expect(server.requests.map((r) => r.url)).to.deep.equal(['/v1/chat/completions?key=v', '/v1/chat/completions'])
    })

    it('refuses a baseURL with a fragment or a repeated query parameter at load, naming the key', () => {
      for (const baseURL of [`${server.baseURL}#frag`, `${server.baseURL}?key=a&key=b`]) {
        for (const error of [thrown(() => resolveConfig({ baseURL } as never, {})), thrown(() => model({ baseURL }))]) {
          expect(error.code, baseURL).to.equal('INVALID_CONFIG')
          expect(error.message).to.include('"baseURL"')
        }
      }
      expect(thrown(() => model({ baseURL: `${server.baseURL}#frag` })).message).to.include('fragment')
      expect(thrown(() => model({ baseURL: `${server.baseURL}?key=a&key=b` })).message).to.include('"key" twice').and.not.include('=a')
    })

    it('rejects a temperature that is NaN, infinite, out of 0–2 or not a number, in the plugin config and in direct use', () => {
      for (const temperature of [Number.NaN, Infinity, -Infinity, -0.1, 2.5, '0.5']) {
        const errors = [
          thrown(() => resolveConfig({ temperature } as never, {})),
          thrown(() => model({ temperature: temperature as number })),
        ]
        for (const error of errors) {
          expect(error.code, String(temperature)).to.equal('INVALID_CONFIG')
          expect(error.message).to.match(/temperature must be a number from 0 to 2, got /)
        }
      }
    })

    it('sends a valid temperature (0 and 2 included) as given', async () => {
      server.reply({ body: completion({ content: 'a' }) }, { body: completion({ content: 'b' }) })
      await model({ temperature: 0 }).generate(request())
      await model({ temperature: 2 }).generate(request())
      expect(server.requests.map((r) => r.body.temperature)).to.deep.equal([0, 2])
    })

    it('rejects NaN and Infinity for every other numeric option too', () => {
      for (const key of ['timeout', 'maxResponseBytes', 'maxRetries']) {
        for (const value of [Number.NaN, Infinity]) {
          expect(thrown(() => resolveConfig({ [key]: value } as never, {})).message, `${key}=${value}`).to.include(key)
          expect(thrown(() => model({ [key]: value })).code, `${key}=${value}`).to.equal('INVALID_CONFIG')
        }
      }
    })
  })

  describe('response size cap', () => {
    it('cuts off a body that never ends past maxResponseBytes, with a clear error', async () => {
      let written = 0
      server.reply((req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.write('{"choices":[{"index":0,"message":{"role":"assistant","content":"')
        const chunk = 'a'.repeat(64 * 1024)
        const pump = () => {
          while (!res.destroyed && written < 300 * 1024 * 1024) {
            written += chunk.length
            if (!res.write(chunk)) return void res.once('drain', pump)
          }
        }
        pump()
        void req.socketClosed
      })
      const res = await model({ maxResponseBytes: 1024 * 1024 }).generate(request())
      expect(res.finishReason).to.equal('error')
      expect(res.diagnostic).to.include('larger than 1048576 bytes').and.include('maxResponseBytes')
      await server.requests[0]!.socketClosed
      // The server was stopped long before 300 MB (socket buffers allow some slack).
      expect(written).to.be.below(64 * 1024 * 1024)
    })

    it('refuses a declared content-length above the cap without reading it', async () => {
      server.reply((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(50 * 1024 * 1024) })
        res.write('{')
      })
      const res = await model({ maxResponseBytes: 4096 }).generate(request())
      expect(res.diagnostic).to.include('larger than 4096 bytes')
    })

    it('accepts a body just under the cap', async () => {
      const body = JSON.stringify(completion({ content: 'ok' }))
      server.reply((_req, res) => sendJson(res, 200, body))
      const res = await model({ maxResponseBytes: Buffer.byteLength(body) }).generate(request())
      expect(res.text).to.equal('ok')
    })
  })
})
