// The quick start with OTEL_EXPORTER_OTLP_ENDPOINT set: the CLI and the ACP agent it starts both
// export their spans over OTLP/HTTP to a collector (here a real HTTP server on 127.0.0.1 that keeps
// what it receives), and the spans form one trace across the two processes.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { buildQuickstart, offlineEnv, runCli } from './helpers.js'

interface OtlpSpan { traceId: string; spanId: string; parentSpanId?: string; name: string; service: string }

/** A minimal OTLP/HTTP JSON collector: every span of every POST to /v1/traces. */
async function collector(): Promise<{ url: string; spans: OtlpSpan[]; paths: string[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = []
  const paths: string[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`)
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
        for (const resourceSpans of body.resourceSpans ?? []) {
          const service = resourceSpans.resource?.attributes?.find((a: any) => a.key === 'service.name')?.value?.stringValue
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              const { traceId, spanId, name } = span
              spans.push({ traceId, spanId, parentSpanId: span.parentSpanId || undefined, name, service })
            }
          }
        }
      } catch {}
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    paths,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

describe('quick start: OTLP export (OTEL_EXPORTER_OTLP_ENDPOINT)', function () {
  this.timeout(60_000)

  before(() => buildQuickstart())

  it('the CLI, its ACP child and the A2A server export one trace: parent, spawn children and both subprocess children with their tool calls', async () => {
    const otlp = await collector()
    try {
      const cli = runCli(['--json', 'Which packages are there?'], offlineEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url }))
      expect(await cli.exited, cli.stderr()).to.equal(0)
      expect(otlp.paths.every((path) => path.startsWith('POST /v1/traces application/json'))).to.equal(true)
      const root = otlp.spans.filter((span) => span.name === 'invoke_agent main' && !span.parentSpanId)
      expect(root, JSON.stringify(otlp.spans.map((s) => s.name))).to.have.length(1)
      const trace = otlp.spans.filter((span) => span.traceId === root[0].traceId)
      const byId = new Map(trace.map((span) => [span.spanId, span]))
      const parentName = (span: OtlpSpan) => (span.parentSpanId ? byId.get(span.parentSpanId)?.name : undefined)
      const names = (service: string) => trace.filter((span) => span.service === service).map((span) => `${span.name} < ${parentName(span) ?? '-'}`).sort()
      expect(names('cordis-subagents-quickstart')).to.include.members([
        'invoke_agent main < -',
        'execute_tool list_files < invoke_agent main',
        'execute_tool subagent < invoke_agent main',
        'execute_tool subagent_acp < invoke_agent main',
        'subagent spawn < execute_tool subagent',
        'subagent acp < execute_tool subagent_acp',
        'invoke_agent spawn < subagent spawn',
        'execute_tool files__read_text_file < invoke_agent spawn',
      ])
      expect(names('cordis-subagents-quickstart').filter((line) => line === 'invoke_agent spawn < subagent spawn')).to.have.length(2)
      expect(names('cordis-subagents-acp-agent')).to.deep.equal([
        'chat demo < invoke_agent acp',
        'chat demo < invoke_agent acp',
        'execute_tool read_file < invoke_agent acp',
        'invoke_agent acp < subagent acp',
      ])
      // The A2A server (another process, over HTTP) continues the trace from the message metadata.
      expect(names('cordis-subagents-a2a-server')).to.deep.equal([
        'chat demo < invoke_agent a2a',
        'chat demo < invoke_agent a2a',
        'execute_tool list_files < invoke_agent a2a',
        'invoke_agent a2a < subagent remote',
      ])
      // Nothing of the run is outside the one trace.
      expect(otlp.spans.filter((span) => span.traceId !== root[0].traceId)).to.deep.equal([])
    } finally {
      await otlp.close()
    }
  })
})
