// Hostile input through the real subagent tool: malformed arguments, degenerate and huge prompts,
// control characters and lone surrogates, unparsable tool-call JSON from the OpenAI mapping, and a
// child that returns 50 MB of text. Each must end in a clear error or a well-defined result.
import { EventEmitter } from 'node:events'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { Context, ForkScope } from 'cordis'
import type { Agent, ChatModel, GenerateRequest, GenerateResponse } from '@cordis-subagents/agent'
import { ScriptedModel } from '@cordis-subagents/agent'
import { fromCompletion } from '@cordis-subagents/model-openai/testing'
import type { ProviderStartRequest } from '@cordis-subagents/subagents-service'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as Acp from '@cordis-subagents/provider-acp'
import {
  INPUT, ProviderControl, call, loadProvider, loadTool, setup, type Harness,
} from '../packages/subagent-tool/tests/helpers.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const MB = 1024 * 1024
/**
 * The provider-acp fixture agent, run through a private symlink: other test runs on this machine
 * reap fixture agents by their path, and must not reap ours (node resolves the SDK via the real path).
 */
const FIXTURE_DIR = mkdtempSync(join(tmpdir(), 'subagents-fixture-'))
const ACP_FIXTURE = join(FIXTURE_DIR, 'agent.mjs')
symlinkSync(fileURLToPath(new URL('../packages/provider-acp/tests/fixtures/agent.mjs', import.meta.url)), ACP_FIXTURE)

describe('hostile input through the real subagent tool', function () {
  this.timeout(30_000)

  let h: Harness
  let control: ProviderControl
  let tool: ForkScope

  beforeEach(async () => {
    h = await setup()
    control = new ProviderControl()
    control.onRun = (run) => run.complete(`echo ${run.request.prompt.length}`)
    await loadProvider(h.ctx, control, { name: 'scripted' })
    tool = await loadTool(h.ctx, { provider: 'scripted' })
  })

  afterEach(async () => {
    await h.stop()
    expect(h.errors.map(String), 'cordis internal errors').to.deep.equal([])
  })

  describe('malformed arguments are reported to the model; nothing is started', () => {
    const cases: [string, unknown, RegExp][] = [
      ['no arguments at all', undefined, /description|prompt|object/i],
      ['null (read as no arguments)', null, /description[\s\S]*prompt/i],
      ['an array', [INPUT.description, INPUT.prompt], /object|array/i],
      ['a bare string', 'do the thing', /object|string/i],
      ['an empty object', {}, /description[\s\S]*prompt|prompt[\s\S]*description/i],
      ['no prompt', { description: INPUT.description }, /prompt/i],
      ['no description', { prompt: INPUT.prompt }, /description/i],
      ['an extra field', { ...INPUT, model: 'gpt-5' }, /model|unrecognized|unknown/i],
      ['a misspelt field', { description: INPUT.description, promt: INPUT.prompt }, /promt|prompt/i],
      ['a numeric prompt', { description: INPUT.description, prompt: 42 }, /prompt/i],
      ['an object prompt', { description: INPUT.description, prompt: { text: 'hi' } }, /prompt/i],
      ['an array prompt', { description: INPUT.description, prompt: ['a', 'b'] }, /prompt/i],
      ['a null description', { description: null, prompt: INPUT.prompt }, /description/i],
      ['an empty prompt', { description: INPUT.description, prompt: '' }, /prompt must not be empty/i],
      ['a whitespace prompt', { description: INPUT.description, prompt: ' \n\t\u00a0 ' }, /whitespace|empty/i],
      ['an empty description', { description: '', prompt: INPUT.prompt }, /description/i],
      ['a whitespace description', { description: '   ', prompt: INPUT.prompt }, /description/i],
      ['a 121-character description', { description: 'd'.repeat(121), prompt: INPUT.prompt }, /120/],
      ['a prototype-polluting key', JSON.parse('{"description":"d","prompt":"p","__proto__":{"polluted":true}}'), /__proto__|unrecognized|unknown/i],
    ]
    for (const [what, input, pattern] of cases) {
      it(what, async () => {
        const result = await call(h.ctx, input)
        expect(result.isError, result.content).to.equal(true)
        expect(result.content).to.match(pattern)
        expect(control.starts, 'provider started').to.have.length(0)
        expect(({} as Record<string, unknown>).polluted).to.equal(undefined)
      })
    }
  })

  it('a 10 MB prompt is handed to the child intact', async () => {
    const prompt = 'p'.repeat(10 * MB)
    const result = await call(h.ctx, { description: 'big', prompt })
    expect(result.isError, result.content.slice(0, 200)).to.not.equal(true)
    expect(result.content).to.equal(`echo ${10 * MB}`)
    expect(control.starts[0].prompt.length).to.equal(10 * MB)
  })

  it('control characters and lone surrogates pass through unchanged, in and out', async () => {
    const nasty = 'a\u0000b\u0007c\u001b[31mred\u001b[0m\r\n\u2028\u2029\uD800 lone high \uDFFF lone low \uFEFF\u202Eevil'
    control.onRun = (run) => run.complete(`child says: ${run.request.prompt}`)
    const result = await call(h.ctx, { description: `label ${nasty}`.slice(0, 100), prompt: nasty })
    expect(result.isError, result.content).to.not.equal(true)
    expect(control.starts[0].prompt).to.equal(nasty)
    expect(result.content).to.equal(`child says: ${nasty}`)
  })

  it('output with lone surrogates over the cap is cut without breaking the text', async () => {
    await tool.update({ provider: 'scripted', maxOutputBytes: 1000 })
    await h.ctx.lifecycle.flush()
    control.onRun = (run) => run.complete('\uD800€'.repeat(1000))
    const result = await call(h.ctx, INPUT)
    expect(result.isError, result.content.slice(0, 200)).to.not.equal(true)
    expect(result.content).to.match(/\[Output truncated: the subagent returned \d+ bytes; the first \d+ are shown\.\]$/)
    const body = result.content.slice(0, result.content.indexOf('\n\n[Output truncated'))
    expect(Buffer.byteLength(body)).to.be.at.most(1000)
    expect(body.endsWith('\uFFFD\uFFFD'), 'cut in the middle of a character').to.equal(false)
  })

  it('a child that returns 50 MB of text: the parent gets a clearly truncated output; memory stays bounded', async () => {
    // A provider that keeps no reference to the run, so the 50 MB string can be collected after the call.
    let size = 0
    await h.ctx.plugin({
      name: 'huge-provider',
      inject: ['subagents'],
      apply(ctx: Context) {
        ctx.subagents.register({
          name: 'huge',
          capabilities: { persona: false, toolFilter: false, depthLimit: false },
          inheritsParentContext: false,
          start: async (request: ProviderStartRequest) => ({
            id: request.runId,
            result: Promise.resolve().then(() => {
              const output = 'x'.repeat(50 * MB)
              size = output.length
              return { stopReason: 'completed' as const, output }
            }),
            cancel() {},
            async dispose() {},
          }),
        })
      },
    } as any)
    await loadTool(h.ctx, { provider: 'huge', toolName: 'huge_tool' })
    gc()
    const before = process.memoryUsage().heapUsed
    const result = await call(h.ctx, INPUT, { name: 'huge_tool' })
    expect(size).to.equal(50 * MB)
    expect(result.isError, result.content.slice(0, 200)).to.not.equal(true)
    expect(result.content).to.match(/\[Output truncated: the subagent returned 52428800 bytes; the first 65536 are shown\.\]$/)
    expect(Buffer.byteLength(result.content)).to.be.at.most(64 * 1024 + 200)
    gc()
    const delta = process.memoryUsage().heapUsed - before
    // The result (64 KiB, the default maxOutputBytes) is kept; the 50 MB output must not be.
    expect(delta, `heapUsed grew by ${(delta / MB).toFixed(1)} MB`).to.be.below(20 * MB)
  })

  it('a failed child with 50 MB of partial output and a 10 MB diagnostic: a bounded, labelled error', async () => {
    control.onRun = (run) => run.finish({ stopReason: 'error', output: 'z'.repeat(50 * MB), diagnostic: 'd'.repeat(10 * MB) })
    const result = await call(h.ctx, INPUT)
    expect(result.isError).to.equal(true)
    expect(result.content).to.match(/^Subagent failed\./)
    expect(result.content).to.include('Partial output (the subagent did not finish; treat this as incomplete):')
    expect(result.content).to.match(/\[Output truncated: the subagent returned 52428800 bytes; the first 65536 are shown\.\]$/)
    // 64 KiB of output + the diagnostic (capped at 4 KiB by the service) + headings.
    expect(Buffer.byteLength(result.content)).to.be.below(64 * 1024 + 8 * 1024)
  })

  it('malformed results (non-string output, unknown stop reason, null) become clear errors', async () => {
    const raws: unknown[] = [
      { stopReason: 'completed', output: Buffer.alloc(10) },
      { stopReason: 'finished', output: 'text' },
      null,
      'just a string',
    ]
    for (const raw of raws) {
      control.onRun = (run) => run.outcome.resolve(raw)
      const result = await call(h.ctx, INPUT)
      expect(result.isError, `${JSON.stringify(raw)} → ${result.content}`).to.equal(true)
      expect(result.content).to.match(/malformed|not a result|stop reason|output/i)
    }
  })

  it('many calls sharing one long-lived signal leave no abort listeners on it', async () => {
    const controller = new AbortController()
    for (let i = 0; i < 30; i++) {
      const result = await call(h.ctx, { description: `task ${i}`, prompt: 'go' }, { signal: controller.signal })
      expect(result.isError).to.not.equal(true)
    }
    const invalid = await call(h.ctx, { description: '', prompt: '' }, { signal: controller.signal })
    expect(invalid.isError).to.equal(true)
    expect(EventEmitter.getEventListeners(controller.signal, 'abort')).to.have.length(0)
  })

  it('a 50 MB answer from an in-process child (spawn) is truncated the same way', async () => {
    const huge = 'y'.repeat(50 * MB)
    h.ctx.agents.registerModel('big', new ScriptedModel(() => ({ text: huge })))
    h.ctx.plugin(Spawn, { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spawn', toolName: 'spawn_tool' })
    const parent = h.ctx.agents.create({ model: 'big', label: 'parent' })
    const result = await call(h.ctx, INPUT, { name: 'spawn_tool', agent: parent })
    expect(result.isError, result.content.slice(0, 200)).to.not.equal(true)
    expect(result.content).to.match(/\[Output truncated: the subagent returned 52428800 bytes; the first 65536 are shown\.\]$/)
  })

  describe('tool-call arguments from the OpenAI mapping that do not parse', () => {
    function completion(args: unknown) {
      return {
        id: 'chatcmpl-1', object: 'chat.completion', created: 0, model: 'loopback',
        choices: [{
          index: 0, finish_reason: 'tool_calls', logprobs: null,
          message: { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'subagent', arguments: args } }] },
        }],
      } as any
    }

    /** A parent model that first answers with the mapped completion, then with plain text. */
    function mappedModel(args: unknown): ChatModel & { requests: GenerateRequest[] } {
      const requests: GenerateRequest[] = []
      return {
        requests,
        async generate(request): Promise<GenerateResponse> {
          requests.push(request)
          if (requests.length === 1) return fromCompletion(completion(args))
          return { text: 'ok', toolCalls: [], finishReason: 'stop' }
        },
      }
    }

    const bad: [string, unknown][] = [
      ['truncated JSON', '{"description": "d", "prompt": "p'],
      ['JSON in a string that does not parse', JSON.stringify('{"description": "d", "prompt": ')],
      ['a JSON string that is not an object', JSON.stringify('just words')],
      ['a JSON array', '["d", "p"]'],
      ['a number', 42],
      ['single quotes', "{'description': 'd', 'prompt': 'p'}"],
      ['a lone surrogate and control bytes', '{"description": "\uD800", "prompt": "\u0000'],
    ]
    for (const [what, args] of bad) {
      it(`${what}: the parent's turn gets an error result and goes on; nothing is started`, async () => {
        const model = mappedModel(args)
        h.ctx.agents.registerModel('openai-like', model)
        const parent = h.ctx.agents.create({ model: 'openai-like' })
        const run = await parent.run('delegate something', { signal: new AbortController().signal })
        expect(run.stopReason).to.equal('completed')
        const toolMessage = parent.transcript.messages.find((message) => message.role === 'tool')
        expect(toolMessage?.isError).to.equal(true)
        expect(toolMessage?.content).to.match(/Invalid arguments for tool "subagent"|description|prompt|object/i)
        expect(control.starts).to.have.length(0)
        await parent.dispose()
      })
    }

    it('double-encoded JSON that does parse is delegated', async () => {
      const model = mappedModel(JSON.stringify(JSON.stringify(INPUT)))
      h.ctx.agents.registerModel('openai-like', model)
      const parent = h.ctx.agents.create({ model: 'openai-like' })
      const run = await parent.run('delegate something', { signal: new AbortController().signal })
      expect(run.stopReason).to.equal('completed')
      expect(control.starts).to.have.length(1)
      expect(control.starts[0].prompt).to.equal(INPUT.prompt)
      await parent.dispose()
    })
  })
})

describe('hostile input through the real tool over ACP (subprocess fixture agent)', function () {
  this.timeout(30_000)

  let h: Harness
  let parent: Agent

  beforeEach(async () => {
    h = await setup()
    // The provider's own output cap (64 KiB here) is below the tool's, so the provider's truncation shows.
    h.ctx.plugin(Acp as any, { name: 'acp', command: process.execPath, args: [ACP_FIXTURE, 'echo'], cancelGrace: 300, killGrace: 300, maxOutputBytes: 60 * 1024 })
    await loadTool(h.ctx, { provider: 'acp', toolName: 'acp_tool' })
    h.ctx.agents.registerModel('unused', new ScriptedModel([]))
    parent = h.ctx.agents.create({ model: 'unused', label: 'parent' })
  })

  afterEach(async () => {
    await h.stop()
    expect(h.errors.map(String), 'cordis internal errors').to.deep.equal([])
  })

  it('control characters, line separators and lone surrogates survive the JSON-RPC round trip', async () => {
    const nasty = 'a\u0000b\u0007c\u001b[31m\r\n\u2028\u2029 \uD800 high \uDFFF low \uFEFF\u202Eend "quoted" \\ backslash'
    const result = await call(h.ctx, { description: 'nasty', prompt: nasty }, { name: 'acp_tool', agent: parent })
    expect(result.isError, result.content).to.not.equal(true)
    const echoed = JSON.parse(result.content)
    // JSON.stringify escapes a lone surrogate (\ud800), so even those round-trip exactly.
    expect(echoed.prompt).to.equal(nasty)
  })

  it('a caller without a cwd (not a real Agent) gets a session in the app directory, not a TypeError', async () => {
    // Regression: provider-acp resolved `parent.cwd` unguarded → `The "paths[1]" argument must be of type string`.
    const result = await call(h.ctx, INPUT, { name: 'acp_tool' })
    expect(result.isError, result.content).to.not.equal(true)
    expect(JSON.parse(result.content).sessionCwd).to.equal(process.cwd())
  })

  it('a 10 MB prompt reaches the agent and its 10 MB echo comes back truncated to the cap (by the provider, as it streams)', async () => {
    const prompt = 'q'.repeat(10 * MB)
    const result = await call(h.ctx, { description: 'big', prompt }, { name: 'acp_tool', agent: parent })
    expect(result.isError, result.content.slice(0, 300)).to.not.equal(true)
    expect(result.content).to.match(/\n\n\[Output truncated by provider-acp: the agent sent 104\d{5} bytes of message text; the first 61184 are kept \(maxOutputBytes 61440\)\.\]$/)
    expect(Buffer.byteLength(result.content)).to.be.at.most(60 * 1024)
    expect(result.content.startsWith('{"prompt":"qqqq')).to.equal(true)
  })
})

after(() => rmSync(FIXTURE_DIR, { recursive: true, force: true }))
