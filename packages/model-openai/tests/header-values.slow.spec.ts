import { Context } from 'cordis'
import { expect } from 'chai'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import * as ModelOpenAI from '@cordis-subagents/model-openai'
import { completion, FakeOpenAIServer } from './fixtures/server.js'

// A header value (a configured header, or the key sent as `Authorization: Bearer <key>`) that fetch cannot send
// failed every call with `Cannot convert argument to a ByteString` and reached no server; it is refused at load now,
// exactly when Node's own `Headers` (what fetch builds) would refuse it, with INVALID_CONFIG naming the field, never the value.

const FAILED = 3

/** Characters around each edge of the Fetch rule: a ByteString (code units ≤ U+00FF), no CR/LF/NUL once trimmed. */
const VALUES = [
  'My app — nightly', 'sk-tëst–key', 'a\u00ffb', 'a\u0100b', 'emoji \u{1F600}', 'lone \ud800', 'curly \u201cquote\u201d',
  'line\nbreak', 'carriage\rreturn', 'nul\0inside', 'nul at end\0', '\0', 'trailing newline\n', 'trailing crlf\r\n',
  '\nleading newline', ' \tpadded\t ', 'tab\tinside', 'control \u0001 \u007f \u0080', '', '\u000bvertical tab\u000c',
]

/** Whether fetch (Node's undici `Headers`) accepts `value` as the value of a header. */
function fetchAccepts(value: string): boolean {
  try {
    new Headers({ 'x-test': value })
    return true
  } catch {
    return false
  }
}

/** The INVALID_CONFIG error `resolveConfig` throws, or undefined when it accepts the config. */
function refusal(config: Partial<ModelOpenAI.Config>, env: NodeJS.ProcessEnv = {}): ModelOpenAI.ModelOpenAIError | undefined {
  try {
    ModelOpenAI.resolveConfig({ ...ModelOpenAI.Config({}), ...config }, env)
    return undefined
  } catch (error) {
    expect(error).to.be.instanceOf(ModelOpenAI.ModelOpenAIError)
    expect((error as ModelOpenAI.ModelOpenAIError).code).to.equal('INVALID_CONFIG')
    return error as ModelOpenAI.ModelOpenAIError
  }
}

describe('model-openai header values (what fetch can send)', () => {
  it('refuses a configured header value exactly when fetch would, naming the header but not the value', () => {
    for (const value of VALUES) {
      const error = refusal({ headers: { 'X-Title': value } })
      expect(!error, JSON.stringify(value)).to.equal(fetchAccepts(value))
      if (!error) continue
      expect(error.message).to.include('"headers"').and.include('"X-Title"')
      if (value.trim().length > 1) expect(error.message, JSON.stringify(value)).to.not.include(value.trim())
    }
  })

  it('refuses apiKey and OPENAI_API_KEY exactly when fetch could not send `Bearer <key>`, naming the field', () => {
    for (const key of VALUES.filter(Boolean)) {
      const accepted = fetchAccepts(`Bearer ${key}`)
      const configured = refusal({ apiKey: key })
      expect(!configured, `apiKey ${JSON.stringify(key)}`).to.equal(accepted)
      const fromEnv = refusal({}, { OPENAI_API_KEY: key })
      expect(!fromEnv, `OPENAI_API_KEY ${JSON.stringify(key)}`).to.equal(accepted)
      if (accepted) continue
      expect(configured!.message).to.include('"apiKey"').and.not.include('OPENAI_API_KEY')
      expect(fromEnv!.message).to.include('OPENAI_API_KEY')
      for (const message of [configured!.message, fromEnv!.message]) {
        if (key.trim().length > 1) expect(message, JSON.stringify(key)).to.not.include(key.trim())
      }
    }
    // An empty key sends no Authorization header at all; a configured key wins over a bad OPENAI_API_KEY.
    expect(refusal({ apiKey: '' }, { OPENAI_API_KEY: 'sk–bad' })).to.equal(undefined)
    expect(refusal({ apiKey: 'sk-good' }, { OPENAI_API_KEY: 'sk–bad' })).to.equal(undefined)
  })

  it('refuses the same in the OpenAIChatModel constructor (direct use), naming options.headers / options.apiKey', () => {
    const make = (options: Partial<ModelOpenAI.OpenAIChatModelOptions>) => () =>
      new ModelOpenAI.OpenAIChatModel({ baseURL: 'http://127.0.0.1:9/v1', model: 'm', ...options })
    expect(make({ headers: { 'X-Title': 'My app — nightly' } }))
      .to.throw(ModelOpenAI.ModelOpenAIError, 'options.headers value of "X-Title"')
    expect(make({ apiKey: 'sk-tëst–key' })).to.throw(ModelOpenAI.ModelOpenAIError, 'options.apiKey has character 8 U+2013')
    expect(make({ apiKey: 'sk-key\n', headers: { 'X-Title': 'Caf\u00e9' } })).to.not.throw()
  })

  describe('through a real cordis app', () => {
    let ctx: Context
    let errors: Error[]
    let server: FakeOpenAIServer
    const savedKey = process.env.OPENAI_API_KEY

    beforeEach(async () => {
      delete process.env.OPENAI_API_KEY
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
      if (savedKey === undefined) delete process.env.OPENAI_API_KEY
      else process.env.OPENAI_API_KEY = savedKey
    })

    async function load(config: Partial<ModelOpenAI.Config>) {
      const fork = ctx.plugin(ModelOpenAI, { baseURL: server.baseURL, model: 'm', maxRetries: 0, ...config })
      await ctx.lifecycle.flush()
      return fork
    }

    it('fails the load on an em dash in a header, an en dash in apiKey or in OPENAI_API_KEY; the app runs on', async () => {
      const header = await load({ name: 'header', apiKey: 'k', headers: { 'X-Title': 'My app — nightly' } })
      const key = await load({ name: 'key', apiKey: 'sk-tëst–key-4c1d8b' })
      process.env.OPENAI_API_KEY = 'sk-env–key-9f7a2e'
      const envKey = await load({ name: 'env-key' })
      expect([header.status, key.status, envKey.status]).to.deep.equal([FAILED, FAILED, FAILED])
      expect(errors.map((error) => (error as ModelOpenAI.ModelOpenAIError).code))
        .to.deep.equal(['INVALID_CONFIG', 'INVALID_CONFIG', 'INVALID_CONFIG'])
      const [onHeader, onKey, onEnv] = errors.map((error) => error.message)
      expect(onHeader).to.include('"X-Title"').and.include('U+2014').and.not.include('nightly')
      expect(onKey).to.include('"apiKey"').and.include('U+2013').and.not.include('4c1d8b')
      expect(onEnv).to.include('OPENAI_API_KEY').and.include('U+2013').and.not.include('9f7a2e')
      expect(ctx.agents.modelNames()).to.deep.equal([])

      // What fetch can send still loads and reaches the server: Latin-1, and a trailing newline fetch trims.
      await load({ name: 'good', apiKey: 'sk-key\n', headers: { 'X-Title': 'Caf\u00e9 nightly\n' } })
      server.reply({ body: completion({ content: 'hello' }) })
      expect(await ctx.agents.create({ model: 'good' }).run('hi')).to.include({ stopReason: 'completed', text: 'hello' })
      expect(server.requests[0]!.headers.authorization).to.equal('Bearer sk-key')
      expect(server.requests[0]!.headers['x-title']).to.equal('Caf\u00e9 nightly')
    })
  })
})
