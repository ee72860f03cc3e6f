// A failed OTLP export says so (the SDK alone reports it only through a silent `diag`): the quick
// start's tracing (examples/quickstart/src/tracing.ts) with the telemetry plugin, exporting to real
// HTTP servers on 127.0.0.1 that refuse what they get, or to a port where nothing listens.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { ScriptedModel } from '@cordis-subagents/agent'
import Telemetry from '@cordis-subagents/telemetry'
import { startTracing } from '@cordis-subagents/quickstart/tracing'
import { startHost } from './support/host.js'

const API_KEY = 'collector-api-key-0123456789'

interface Receiver { url: string; requests: Array<{ status: number; body: string }>; close(): Promise<void> }

/** An OTLP/HTTP receiver answering `status(body)`; like Fiberplane Studio's, its error text echoes the request's API key header. */
async function receiver(status: (body: string) => number): Promise<Receiver> {
  const requests: Receiver['requests'] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const code = status(body)
      requests.push({ status: code, body })
      res.writeHead(code, { 'content-type': 'application/json' })
      res.end(code === 200 ? '{}' : JSON.stringify({ error: `cannot store spans (key ${req.headers['x-api-key']})` }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

/** Two root runs traced through `startTracing` to `endpoint`; returns the warnings, after the exporter flushed. */
async function traceTwoRuns(endpoint: string, telemetry: Record<string, unknown> = {}): Promise<string[]> {
  const warnings: string[] = []
  // A short export timeout: the SDK retries a refused connection until it passes.
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_HEADERS: `x-api-key=${API_KEY}`, OTEL_EXPORTER_OTLP_TIMEOUT: '1500' }
  const tracing = await startTracing('export-test', env, (message) => { warnings.push(message) })
  expect(tracing).to.not.equal(undefined)
  const host = await startHost({ before: (ctx) => ctx.plugin(Telemetry, { ...telemetry, tracerProvider: tracing!.provider }) })
  try {
    host.ctx.agents.registerModel('demo', new ScriptedModel([{ text: 'one' }, { text: 'two' }]))
    for (const _ of [1, 2]) {
      const agent = host.ctx.agents.create({ model: 'demo', label: 'main' })
      await agent.run('hello')
      await agent.dispose()
      // One batch per run: flush between them, so the second failure is a second batch.
      // (A flush of a refused batch rejects; the warning is what this test is about.)
      await (tracing!.provider as unknown as { forceFlush(): Promise<void> }).forceFlush().catch(() => {})
    }
  } finally {
    await host.stop()
    await tracing!.shutdown()
  }
  return warnings
}

/** Whether an OTLP/HTTP JSON body holds an array-valued attribute. */
const hasArrays = (body: string) => body.includes('"arrayValue"')

describe('telemetry: failed OTLP exports are reported (quick start tracing)', function () {
  this.timeout(30_000)

  it('a receiver answering 500 to every batch: one warning naming the endpoint, the status and what to do; never the header value', async () => {
    const server = await receiver(() => 500)
    try {
      const warnings = await traceTwoRuns(server.url)
      expect(server.requests.length).to.be.at.least(2)
      expect(warnings).to.have.length(1)
      expect(warnings[0]).to.include(`OTLP export to ${server.url}/v1/traces failed with HTTP 500`)
      expect(warnings[0]).to.include('cannot store spans')
      expect(warnings[0]).to.include('flatAttributes: true')
      expect(warnings.join('\n')).to.not.include(API_KEY)
    } finally {
      await server.close()
    }
  })

  it('a receiver that rejects array attributes (400): warned once; with flatAttributes: true every batch is accepted, finish reasons joined', async () => {
    const server = await receiver((body) => (hasArrays(body) ? 400 : 200))
    try {
      const warnings = await traceTwoRuns(server.url)
      expect(warnings).to.have.length(1)
      expect(warnings[0]).to.include('failed with HTTP 400').and.include('flatAttributes: true')
      expect(server.requests.every((request) => request.status === 400)).to.equal(true)

      server.requests.length = 0
      expect(await traceTwoRuns(server.url, { flatAttributes: true })).to.deep.equal([])
      expect(server.requests.length).to.be.at.least(2)
      expect(server.requests.every((request) => request.status === 200)).to.equal(true)
      expect(server.requests.some((request) => request.body.includes('"key":"gen_ai.response.finish_reasons","value":{"stringValue":"stop"}'))).to.equal(true)
    } finally {
      await server.close()
    }
  })

  it('nothing listening at the endpoint: one warning with the network error code', async () => {
    const closed = await receiver(() => 200)
    await closed.close()
    const warnings = await traceTwoRuns(closed.url)
    expect(warnings).to.have.length(1)
    expect(warnings[0]).to.include(`OTLP export to ${closed.url}/v1/traces failed with ECONNREFUSED`)
    expect(warnings[0], warnings[0]).to.include('Check that the collector runs')
  })
})
