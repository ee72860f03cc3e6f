/// <reference types="mocha" />
// The telemetry plugin on its own terms: its shape for the loader, content capture (off by
// default, cut when on), continuing a remote trace (continueTrace, TRACEPARENT), spans closed on
// unload, and nothing at all (no spans, no trace context, no observer) when it is not loaded.
import { expect } from 'chai'
import { Context, Service } from 'cordis'
import { ProxyTracer, trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { type GenerateRequest, RateLimitedError, type ScriptedResponse } from '@cordis-subagents/agent'
import type { ProviderStartRequest } from '@cordis-subagents/subagents-service'
import { FakeProvider } from '@cordis-subagents/subagents-service/testing'
import * as Telemetry from '@cordis-subagents/telemetry'
import { ERROR_TYPE, GEN_AI, OURS, SERVER } from '@cordis-subagents/telemetry/testing'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import { until } from '../../../test/support/async.js'
import { lastUserText, rootSpan, spansOf, startTracedHost, toolResults, tree, type TracedHost } from '../../../test/support/traced-host.js'

const REMOTE = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'

/** The parent delegates one task to spawn, then answers; the child echoes its prompt. */
function oneChild(request: GenerateRequest): ScriptedResponse {
  const prompt = lastUserText(request)
  if (prompt !== 'ROOT') return { text: `child says: ${prompt}` }
  if (toolResults(request).length) return { text: 'parent done' }
  return { toolCalls: [{ id: 'call-1', name: 'subagent', input: { description: 'the task', prompt: `secret task ${'x'.repeat(100)}` } }] }
}


/** `ctx.subagents` watches root runs itself (one observer) to put the tree's account on their result (issue 44 item 4). */
const ACCOUNT_OBSERVER = 1

describe('@cordis-subagents/telemetry', function () {
  this.timeout(20_000)
  let host: TracedHost | undefined

  afterEach(async () => {
    await host?.stop()
    host = undefined
  })

  it('default-exports the Telemetry service class for the loader, with no stray named inject', async () => {
    expect(Telemetry.default).to.equal(Telemetry.Telemetry)
    expect(Telemetry.default.prototype).to.be.instanceOf(Service)
    expect(Telemetry).to.not.have.property('inject')
    expect(Telemetry.default.inject).to.deep.equal(['agents'])
    expect(Telemetry.Config({})).to.deep.include({ captureContent: false, maxContentLength: 4096, fromEnvironment: true })
  })

  it('the README documents every attribute the spans carry', async () => {
    const { readFile } = await import('node:fs/promises')
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    const names = [...Object.values(GEN_AI), ...Object.values(OURS), ...Object.values(SERVER), ERROR_TYPE]
    // Attribute families are documented as `a.b.c` / `.d`: expand the shorthand before checking.
    const documented = new Set<string>()
    for (const [, cell] of readme.matchAll(/^\| (`[^|]+) \|/gm)) {
      let base = ''
      for (const [, name] of cell.matchAll(/`([^`]+)`/g)) {
        if (name.startsWith('.')) documented.add(base + name)
        else {
          documented.add(name)
          base = name.slice(0, name.lastIndexOf('.'))
        }
      }
    }
    expect(names.filter((name) => !documented.has(name))).to.deep.equal([])
  })

  it('captureContent: the prompt, the output and tool arguments/results, each cut to maxContentLength', async () => {
    host = await startTracedHost({ script: oneChild, telemetry: { captureContent: true, maxContentLength: 40 } })
    await host.ctx.agents.create({ label: 'main' }).run('ROOT')
    const spans = spansOf(host.exporter)
    const root = rootSpan(spans, 'invoke_agent main')
    expect(JSON.parse(root.attributes['gen_ai.input.messages'] as string)).to.deep.equal([{ role: 'user', parts: [{ type: 'text', content: 'ROOT' }] }])
    expect(JSON.parse(root.attributes['gen_ai.output.messages'] as string)).to.deep.equal([
      { role: 'assistant', parts: [{ type: 'text', content: 'parent done' }], finish_reason: 'completed' },
    ])
    const tool = spans.find((span) => span.name === 'execute_tool subagent')!
    const args = JSON.stringify({ description: 'the task', prompt: `secret task ${'x'.repeat(100)}` })
    expect(tool.attributes['gen_ai.tool.call.arguments']).to.equal(`${args.slice(0, 40)}… [${args.length - 40} more characters]`)
    expect(tool.attributes['gen_ai.tool.call.result']).to.match(/^child says: secret task x+… \[\d+ more characters\]$/)
    const chat = spans.find((span) => span.name === 'chat script' && span.attributes['cordis_subagents.step'] === 1 && span.parentSpanId === root.spanId)!
    expect(JSON.parse(chat.attributes['gen_ai.output.messages'] as string)).to.deep.equal([
      { role: 'assistant', parts: [{ type: 'text', content: '' }, { type: 'tool_call', id: 'call-1', name: 'subagent' }], finish_reason: 'tool-calls' },
    ])
  })

  it('captureContent: a response\'s tool calls are recorded with bounded ids and names, at most 64 of them', async () => {
    const huge = (c: string) => c.repeat(200_000)
    host = await startTracedHost({
      agents: { maxToolCallsPerStep: 100 },
      telemetry: { captureContent: true },
      script: (request) => toolResults(request).length ? { text: 'done' }
        : { toolCalls: Array.from({ length: 80 }, (_, i) => ({ id: `${i}-${huge('i')}`, name: huge('n'), input: {} })) },
    })
    await host.ctx.agents.create({ label: 'main' }).run('ROOT')
    const chat = spansOf(host.exporter).find((span) => span.name === 'chat script' && span.attributes['cordis_subagents.step'] === 1)!
    const recorded = chat.attributes['gen_ai.output.messages'] as string
    expect(recorded.length).to.be.below(64 * 1024)
    const [{ parts }] = JSON.parse(recorded) as [{ parts: { type: string; id?: string; name?: string; content?: string }[] }]
    const calls = parts.filter((part) => part.type === 'tool_call')
    expect(calls).to.have.length(64)
    for (const call of calls) expect(call.id!.length + call.name!.length).to.be.at.most(2 * 257)
    expect(parts.at(-1)).to.deep.equal({ type: 'text', content: '[16 more tool calls not recorded]' })
  })

  it('a model call that waited on its endpoint\'s rate-limit backoff carries the wait on its chat span', async () => {
    let refused = 0
    host = await startTracedHost({
      agents: { rateLimit: { maxJitterMs: 0 } },
      script: () => {
        if (!refused++) throw new RateLimitedError('RATE_LIMITED', 'HTTP 429', { endpoint: 'the script', status: 429, retryAfterMs: 30 })
        return { text: 'after the pause' }
      },
    })
    const result = await host.ctx.agents.create({ label: 'main' }).run('ROOT')
    expect(result.text).to.equal('after the pause')
    const chats = spansOf(host.exporter).filter((span) => span.name === 'chat script')
    expect(chats).to.have.length(1) // one model call of the run, retried inside the gate
    expect(chats[0].attributes['cordis_subagents.rate_limit.wait_ms']).to.be.at.least(30 - 1).and.equal(result.usage.rateLimitWaitMs)
  })

  it('content is not captured by default', async () => {
    host = await startTracedHost({ script: oneChild })
    await host.ctx.agents.create({ label: 'main' }).run('ROOT')
    const spans = spansOf(host.exporter)
    expect(spans).to.have.length(7)
    for (const span of spans) expect(JSON.stringify(span.attributes)).to.not.include('secret task')
  })

  it('continueTrace: a root run continues a remote trace; a malformed context is refused and clears it', async () => {
    host = await startTracedHost({ script: () => ({ text: 'hi' }) })
    const agent = host.ctx.agents.create({ label: 'acp' })
    expect(host.ctx.telemetry.continueTrace(agent, { traceparent: REMOTE, tracestate: 'k=v' })).to.equal(true)
    await agent.run('one')
    expect(host.ctx.telemetry.continueTrace(agent, { traceparent: 'nonsense' })).to.equal(false)
    await agent.run('two')
    const runs = spansOf(host.exporter).filter((span) => span.name === 'invoke_agent acp')
    expect(runs.map((span) => [span.traceId === '4bf92f3577b34da6a3ce929d0e0e4736', span.parentSpanId])).to.deep.equal([
      [true, '00f067aa0ba902b7'],
      [false, undefined],
    ])
  })

  it('fromEnvironment: root runs continue TRACEPARENT; with fromEnvironment false they start their own trace', async () => {
    process.env.TRACEPARENT = REMOTE
    try {
      for (const fromEnvironment of [true, false]) {
        host = await startTracedHost({ script: () => ({ text: 'hi' }), telemetry: { fromEnvironment } })
        await host.ctx.agents.create({ label: 'root' }).run('x')
        const span = spansOf(host.exporter).find((s) => s.name === 'invoke_agent root')!
        expect(span.parentSpanId).to.equal(fromEnvironment ? '00f067aa0ba902b7' : undefined)
        await host.stop()
        host = undefined
      }
    } finally {
      delete process.env.TRACEPARENT
    }
  })

  it('a background delegation handed over after its tool call returned keeps its span open until its run ends', async () => {
    host = await startTracedHost({
      script: (request: GenerateRequest) => {
        const prompt = lastUserText(request)
        if (prompt === 'ROOT') {
          if (!toolResults(request).length) return { toolCalls: [{ id: 'call-bg', name: 'subagent_bg', input: { description: 'bg task', prompt: 'work' } }] }
          return { text: 'parent waits' }
        }
        return { text: 'parent done' }
      },
    })
    const slow = new FakeProvider('slow')
    let handOver!: () => void
    slow.hold = { promise: new Promise<void>((resolve) => { handOver = resolve }) } as never
    slow.onRun = (run) => setTimeout(() => run.complete('slow child output'), 5)
    host.ctx.subagents.register(slow)
    const tool = host.ctx.plugin(SubagentTool, { provider: 'slow', toolName: 'subagent_bg', mode: 'background' })
    await host.ctx.lifecycle.flush()
    const running = host.ctx.agents.create({ label: 'main' }).run('ROOT')
    await until(() => spansOf(host!.exporter).some((span) => span.name === 'execute_tool subagent_bg'), 'the tool call ended')
    handOver()
    expect((await running).stopReason).to.equal('completed')
    const span = spansOf(host.exporter).find((span) => span.name === 'subagent slow')!
    expect(span.attributes['error.type']).to.equal(undefined)
    expect(span.attributes['cordis_subagents.stop_reason']).to.equal('completed')
    tool.dispose()
  })

  it('a start the provider refuses ends its span start_failed with the code, and nothing stays open', async () => {
    host = await startTracedHost({ script: () => ({ text: 'x' }) })
    const broken = new FakeProvider('broken')
    broken.startError = new Error('boom')
    host.ctx.subagents.register(broken)
    const parent = host.ctx.agents.create({ label: 'p' })
    for (let i = 0; i < 20; i++) {
      await host.ctx.subagents.delegate('broken', { prompt: 'hi', parent, signal: new AbortController().signal }).catch(() => {})
    }
    const spans = spansOf(host.exporter).filter((span) => span.name === 'subagent broken')
    expect(spans).to.have.length(20)
    for (const span of spans) {
      expect(span.attributes['error.type']).to.equal('start_failed')
      expect(span.attributes['cordis_subagents.subagent.error_code']).to.equal('PROVIDER_START_FAILED')
    }
  })

  it('unloading mid-run ends the open spans as incomplete; later runs record nothing', async () => {
    let started!: () => void
    const waiting = new Promise<void>((resolve) => { started = resolve })
    host = await startTracedHost({
      script: (request) => {
        if (lastUserText(request) !== 'ROOT') {
          started()
          return new Promise<ScriptedResponse>(() => {})
        }
        return { toolCalls: [{ id: 'call-1', name: 'subagent', input: { description: 'd', prompt: 'hang' } }] }
      },
    })
    const controller = new AbortController()
    const agent = host.ctx.agents.create({ label: 'main' })
    const running = agent.run('ROOT', { signal: controller.signal })
    await waiting
    await until(() => host!.ctx.subagents.runs().length === 1, 'the child was handed over')
    const fork = [...host.ctx.registry.values()].find((runtime) => runtime.plugin === Telemetry.default)!
    fork.dispose()
    const spans = spansOf(host.exporter)
    expect(tree(spans, rootSpan(spans, 'invoke_agent main'))).to.deep.equal([
      'invoke_agent main (depth=0, error=incomplete)',
      '  chat script (step=1, finish=tool-calls)',
      '  execute_tool subagent (call=call-1, error=incomplete)',
      '    subagent spawn (error=incomplete)',
      '      invoke_agent spawn (depth=1, error=incomplete)',
      '        chat script (step=1, error=incomplete)',
    ])
    controller.abort()
    await running
    await agent.run('ROOT', { signal: AbortSignal.abort() })
    expect(spansOf(host.exporter)).to.have.length(spans.length)
  })

  it('a hostile model\'s megabyte tool name and call id are cut to 256 characters on spans', async () => {
    const huge = 'x'.repeat(1 << 20)
    host = await startTracedHost({
      script: (request) => (toolResults(request).length ? { text: 'done' } : { toolCalls: [{ id: huge, name: huge, input: {} }] }),
    })
    await host.ctx.agents.create({ label: 'main' }).run('ROOT')
    const tool = spansOf(host.exporter).find((span) => span.attributes['gen_ai.operation.name'] === 'execute_tool')!
    expect(tool.name).to.equal(`execute_tool ${'x'.repeat(256)}…`)
    expect(tool.attributes['gen_ai.tool.call.id']).to.have.length(257)
    expect(tool.status).to.equal(2)
  })

  it('ctx.subagents loaded after the plugin is used from then on', async () => {
    const [{ default: ToolRegistry }, { default: AgentRuntime }, { default: SubagentService }] = await Promise.all([
      import('@cordis-subagents/tools'), import('@cordis-subagents/agent'), import('@cordis-subagents/subagents-service'),
    ])
    const exporter = new InMemorySpanExporter()
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    const ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime)
    ctx.plugin(Telemetry.default, { tracerProvider: provider })
    try {
      await ctx.start()
      await ctx.lifecycle.flush()
      expect(ctx.get('telemetry')).to.be.instanceOf(Telemetry.Telemetry)
      ctx.plugin(SubagentService)
      const fake = new FakeProvider('fake')
      ctx.plugin({ name: 'fake', inject: ['subagents'], apply: (c: Context) => { c.subagents.register(fake) } })
      await ctx.lifecycle.flush()
      const run = await ctx.subagents.delegate('fake', { prompt: 'p', parent: ctx.agents.create(), signal: new AbortController().signal })
      fake.last.complete()
      await run.result
      await run.dispose()
      expect((fake.calls[0] as ProviderStartRequest).traceContext?.traceparent).to.match(/^00-/)
      expect(exporter.getFinishedSpans().map((span) => span.name)).to.deep.equal(['subagent fake'])
    } finally {
      await ctx.stop()
      await provider.shutdown()
    }
  })

  describe('not loaded', () => {
    const exporter = new InMemorySpanExporter()
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    before(() => { trace.setGlobalTracerProvider(provider) })
    after(async () => {
      trace.disable()
      await provider.shutdown()
    })

    it('no spans, no trace context on delegations, no observer of its own; loading it (global provider) then adds all three', async () => {
      const { startHost } = await import('../../../test/support/host.js')
      const fake = new FakeProvider('fake')
      const h = await startHost({
        before: (c) => {
          c.plugin({ name: 'fake', inject: ['subagents'], apply: (c: Context) => { c.subagents.register(fake) } })
          c.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('m', { generate: async () => ({ text: 'ok', toolCalls: [], finishReason: 'stop' }) }) } })
        },
      })
      try {
        const delegateOnce = async () => {
          const parent = h.ctx.agents.create()
          await parent.run('x')
          const run = await h.ctx.subagents.delegate('fake', { prompt: 'p', parent, signal: new AbortController().signal })
          fake.last.complete()
          await run.result
          await run.dispose()
          return fake.calls.at(-1) as ProviderStartRequest
        }
        expect(h.ctx.agents.observerCount).to.equal(ACCOUNT_OBSERVER)
        expect(await delegateOnce()).to.not.have.property('traceContext')
        expect(exporter.getFinishedSpans()).to.have.length(0)

        const fork = h.ctx.plugin(Telemetry.default)
        await h.ctx.lifecycle.flush()
        expect(h.ctx.agents.observerCount).to.equal(ACCOUNT_OBSERVER + 1)
        const traced = await delegateOnce()
        expect(traced.traceContext?.traceparent).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
        await until(() => exporter.getFinishedSpans().some((span) => span.name === 'subagent fake'), 'the delegation span ended')
        expect(exporter.getFinishedSpans().map((span) => span.name).sort()).to.deep.equal(['chat model', 'invoke_agent agent', 'subagent fake'])
        fork.dispose()
        expect(h.ctx.agents.observerCount).to.equal(ACCOUNT_OBSERVER)
        expect(await delegateOnce()).to.not.have.property('traceContext')
        expect(exporter.getFinishedSpans()).to.have.length(3)
      } finally {
        await h.stop()
      }
    })
  })
  describe('loaded without an SDK', () => {
    const exporter = new InMemorySpanExporter()
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    const startSpan = ProxyTracer.prototype.startSpan
    let started = 0
    before(() => {
      trace.disable()
      ProxyTracer.prototype.startSpan = function (...args: Parameters<typeof startSpan>) {
        started++
        return startSpan.apply(this, args)
      }
    })
    after(async () => {
      ProxyTracer.prototype.startSpan = startSpan
      trace.disable()
      await provider.shutdown()
    })

    it('starts no span at all (runs are declined, delegations carry nothing); an SDK registered later is used from its next run', async () => {
      const { startHost } = await import('../../../test/support/host.js')
      const fake = new FakeProvider('fake')
      const h = await startHost({
        before: (c) => {
          c.plugin({ name: 'fake', inject: ['subagents'], apply: (c: Context) => { c.subagents.register(fake) } })
          c.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('m', { generate: async () => ({ text: 'ok', toolCalls: [], finishReason: 'stop' }) }) } })
        },
      })
      try {
        h.ctx.plugin(Telemetry.default)
        await h.ctx.lifecycle.flush()
        const delegateOnce = async () => {
          const parent = h.ctx.agents.create()
          await parent.run('x')
          const run = await h.ctx.subagents.delegate('fake', { prompt: 'p', parent, signal: new AbortController().signal })
          fake.last.complete()
          await run.result
          await run.dispose()
          return fake.calls.at(-1) as ProviderStartRequest
        }
        expect(h.ctx.agents.observerCount).to.equal(ACCOUNT_OBSERVER + 1)
        expect(await delegateOnce()).to.not.have.property('traceContext')
        expect(started).to.equal(0)

        trace.setGlobalTracerProvider(provider)
        const traced = await delegateOnce()
        expect(traced.traceContext?.traceparent).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
        expect(started).to.equal(3)
        await until(() => exporter.getFinishedSpans().some((span) => span.name === 'subagent fake'), 'the delegation span ended')
        expect(exporter.getFinishedSpans().map((span) => span.name).sort()).to.deep.equal(['chat model', 'invoke_agent agent', 'subagent fake'])
      } finally {
        await h.stop()
      }
    })
  })
})
