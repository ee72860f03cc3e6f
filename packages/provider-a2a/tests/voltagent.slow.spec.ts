// Ours → theirs: provider-a2a delegating to the real `@voltagent/a2a-server` (A2A 0.2/0.3 JSON-RPC),
// serving a real `@voltagent/core` Agent whose model is scripted (`ai/test`'s MockLanguageModelV3,
// the far edge). VoltAgent ships no HTTP server of its own in this package: a thin node:http wrapper
// on 127.0.0.1 hands each request to its `getAgentCard` / `handleRequest`, as its server adapters do.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { context, propagation, trace } from '@opentelemetry/api'
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test'
import { provider, request, within } from './helpers.js'

type VoltCore = typeof import('@voltagent/core')
type VoltA2a = typeof import('@voltagent/a2a-server')
let volt: { core: VoltCore; a2a: VoltA2a }

/**
 * @voltagent/core, when NODE_ENV is not `production`, starts refreshing its model registry from
 * models.dev at import (a network call and an interval): import it as production, nothing else changes.
 */
async function importVoltAgent() {
  const previous = process.env.NODE_ENV
  process.env.NODE_ENV = 'production'
  try {
    return { core: await import('@voltagent/core'), a2a: await import('@voltagent/a2a-server') }
  } finally {
    if (previous === undefined) delete process.env.NODE_ENV
    else process.env.NODE_ENV = previous
  }
}

const ANSWER = 'The capital of France is Paris.'

function scriptedModel() {
  const usage = { inputTokens: { total: 5, noCache: 5, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 7, text: 7, reasoning: 0 } }
  const finishReason = { unified: 'stop' as const, raw: 'stop' }
  return new MockLanguageModelV3({
    doGenerate: async () => ({ content: [{ type: 'text', text: ANSWER }], finishReason, usage, warnings: [] }),
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: 'stream-start', warnings: [] },
          { type: 'text-start', id: 't1' },
          ...ANSWER.split(/(?<= )/).map((delta) => ({ type: 'text-delta' as const, id: 't1', delta })),
          { type: 'text-end', id: 't1' },
          { type: 'finish', finishReason, usage },
        ],
      }),
    }),
  })
}

async function serveVoltAgent(streaming: boolean): Promise<{ url: string; methods: string[]; close(): Promise<void> }> {
  const agent = new volt.core.Agent({ id: 'geo', name: 'geo', purpose: 'Answers geography questions.', instructions: 'Answer briefly.', model: scriptedModel() as never })
  const a2a = new volt.a2a.A2AServer({ name: 'volt', version: '1.0.0', agents: { geo: agent } })
  a2a.initialize({ agentRegistry: { getAllAgents: () => [], getAgent: () => undefined } } as never)
  const methods: string[] = []
  const server: Server = createServer((req, res) => {
    const requestUrl = `http://${req.headers.host}${req.url}`
    if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') {
      const card = { ...a2a.getAgentCard('geo', { requestUrl }), capabilities: { streaming, pushNotifications: false, stateTransitionHistory: false } }
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(card))
      return
    }
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk) => { body += chunk })
    req.on('end', async () => {
      const rpc = JSON.parse(body)
      methods.push(rpc.method)
      const result = await a2a.handleRequest('geo', rpc, { requestUrl })
      if ('kind' in result && result.kind === 'stream') {
        res.setHeader('content-type', 'text/event-stream')
        for await (const event of result.stream) res.write(`data: ${JSON.stringify(event)}\n\n`)
        res.end()
      } else {
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify(result))
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    methods,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      // The agent's own observability (made at its first call; its span store and exporters keep intervals).
      await (agent as unknown as { getObservability(): { shutdown(): Promise<void> } }).getObservability().shutdown()
    },
  }
}

describe('provider-a2a → @voltagent/a2a-server (A2A 0.2/0.3, a real VoltAgent agent, scripted model)', function () {
  this.timeout(30_000)
  const globals = globalThis as { AI_SDK_LOG_WARNINGS?: unknown }
  let warnings: unknown
  before(async () => {
    volt ??= await importVoltAgent()
    // The AI SDK warns on console about VoltAgent's system message; not ours to fix.
    warnings = globals.AI_SDK_LOG_WARNINGS
    globals.AI_SDK_LOG_WARNINGS = false
  })
  /** OpenTelemetry globals registered before these tests (VoltAgent registers its own at an agent's first call). */
  let otelBefore: string[] = []
  const otelGlobals = () => Object.keys((globalThis as Record<symbol, object | undefined>)[Symbol.for('opentelemetry.js.api.1')] ?? {})
  before(() => {
    otelBefore = otelGlobals()
  })
  after(() => {
    globals.AI_SDK_LOG_WARNINGS = warnings
    // Leave the process's tracing as we found it: later tests (telemetry) register their own provider.
    const added = otelGlobals().filter((key) => !otelBefore.includes(key))
    if (added.includes('trace')) trace.disable()
    if (added.includes('context')) context.disable()
    if (added.includes('propagation')) propagation.disable()
  })
  for (const streaming of [true, false]) {
    it(`a delegation completes and returns the agent's text (${streaming ? 'message/stream' : 'message/send + tasks/get'})`, async () => {
      const served = await serveVoltAgent(streaming)
      try {
        // VoltAgent's message/send answers only once the agent finished (it ignores blocking: false):
        // give that answer room on a loaded machine.
        const remote = await provider(served.url, { requestTimeout: 20_000 })
        expect(remote.protocol).to.equal('0.3')
        expect(remote.description).to.match(/^the remote agent "geo" at http:\/\/127\.0\.0\.1:\d+ over A2A: Answers geography questions\./)
        const handle = await within(remote.start(request({ prompt: 'What is the capital of France?' })), 10_000, 'start')
        expect(handle.childId).to.match(/^[0-9a-f-]{36}$/)
        const result = await within(handle.result, 10_000, 'result')
        await within(handle.dispose(), 10_000, 'dispose')
        expect(result).to.include({ stopReason: 'completed', output: ANSWER })
        expect(served.methods[0]).to.equal(streaming ? 'message/stream' : 'message/send')
      } finally {
        await served.close()
      }
    })
  }
})
