/// <reference types="mocha" />
// warnOnExportFailure on a scripted exporter (the far edge), and flatAttributes on the spans the
// plugin records; test/telemetry-export.slow.spec.ts runs both against real OTLP/HTTP receivers.
import { expect } from 'chai'
import type { ScriptedResponse } from '@cordis-subagents/agent'
import { ARRAY_ATTRIBUTES, type ExportOutcome, type SpanExporterLike, warnOnExportFailure } from '@cordis-subagents/telemetry'
import { failureKind, GEN_AI } from '@cordis-subagents/telemetry/testing'
import { startTracedHost, type TracedHost } from '../../../test/support/traced-host.js'

/** An exporter answering each export with the next outcome of `outcomes`. */
function scripted(outcomes: ExportOutcome[]): SpanExporterLike<string> & { shutdowns: number } {
  return {
    shutdowns: 0,
    export(_spans, done) {
      done(outcomes.shift() ?? { code: 0 })
    },
    async shutdown() {
      this.shutdowns++
    },
  }
}

const httpError = (code: number, data = '') => Object.assign(new Error('Internal Server Error'), { code, data })
const netError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:4318`), { code })

describe('@cordis-subagents/telemetry: export failures and flat attributes', function () {
  this.timeout(20_000)
  let host: TracedHost | undefined

  afterEach(async () => {
    await host?.stop()
    host = undefined
  })

  it('warns once per failure kind, passes every outcome through, never shows a secret', async () => {
    const outcomes = [
      { code: 1, error: httpError(500, '{"error":"bad attribute","echo":"Bearer tok-secret-value-1"}') },
      { code: 1, error: httpError(500) },
      { code: 0 },
      { code: 1, error: netError('ECONNREFUSED') },
      { code: 1, error: netError('ECONNREFUSED') },
      { code: 1, error: httpError(401) },
    ]
    const expected = outcomes.map((outcome) => outcome.code)
    const warnings: string[] = []
    const inner = scripted([...outcomes])
    const exporter = warnOnExportFailure(inner, { endpoint: 'http://127.0.0.1:4318/v1/traces', warn: (m) => warnings.push(m), secrets: ['tok-secret-value-1'] })
    const seen: number[] = []
    for (const _ of expected) exporter.export(['span'], (result) => seen.push(result.code))
    expect(seen).to.deep.equal(expected)
    expect(warnings).to.have.length(3)
    expect(warnings[0]).to.match(/^OTEL_EXPORT_FAILED: OTLP export to http:\/\/127\.0\.0\.1:4318\/v1\/traces failed with HTTP 500; it answered: \{"error":"bad attribute"/)
    expect(warnings[0]).to.include('flatAttributes: true').and.not.include('tok-secret-value-1')
    expect(warnings[1]).to.include('failed with ECONNREFUSED').and.include('Check that the collector runs')
    expect(warnings[2]).to.include('failed with HTTP 401').and.include('OTEL_EXPORTER_OTLP_HEADERS')
    await exporter.shutdown()
    expect(inner.shutdowns).to.equal(1)
  })

  it('a throwing warn never loses the SDK callback; the kinds are bounded', async () => {
    const outcomes = Array.from({ length: 40 }, (_, i) => ({ code: 1, error: httpError(400 + i) }))
    let calls = 0
    const exporter = warnOnExportFailure(scripted(outcomes), { endpoint: 'x', warn: () => { calls++; throw new Error('logger broke') } })
    let done = 0
    for (let i = 0; i < 40; i++) exporter.export([], () => done++)
    expect(done).to.equal(40)
    expect(calls).to.equal(16)
  })

  it('failureKind: an HTTP status, a network code, else "error"', () => {
    expect(failureKind(httpError(503))).to.equal('HTTP 503')
    expect(failureKind(netError('ETIMEDOUT'))).to.equal('ETIMEDOUT')
    expect(failureKind(new Error('x'))).to.equal('error')
    expect(failureKind({ code: 'not a code; rm -rf' })).to.equal('error')
    expect(failureKind(undefined)).to.equal('error')
  })

  it('finish reasons are the one array attribute: string[] by default, a joined string with flatAttributes: true', async () => {
    expect(ARRAY_ATTRIBUTES).to.deep.equal([GEN_AI.finishReasons])
    const finishReasons = async (telemetry: Record<string, unknown>) => {
      host = await startTracedHost({ script: (): ScriptedResponse => ({ text: 'done' }), telemetry })
      const agent = host.ctx.agents.create({ label: 'main' })
      await agent.run('ROOT')
      await agent.dispose()
      const chat = host.exporter.getFinishedSpans().find((span) => span.name.startsWith('chat '))
      await host.stop()
      host = undefined
      return chat?.attributes[GEN_AI.finishReasons]
    }
    expect(await finishReasons({})).to.deep.equal(['stop'])
    expect(await finishReasons({ flatAttributes: true })).to.equal('stop')
  })
})
