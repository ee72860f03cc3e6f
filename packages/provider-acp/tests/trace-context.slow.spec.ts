/// <reference types="mocha" />
// The delegation's W3C trace context reaches the ACP agent: in `_meta` of session/new and
// session/prompt (the root keys ACP reserves for it) and as TRACEPARENT / TRACESTATE in the
// environment of a process started for the run; a trace inherited from this host never leaks.
import { expect } from 'chai'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import { assertNoLeftovers, hostileProvider, reapAll, request } from './helpers.js'

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
const TRACESTATE = 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7'

describe('provider-acp: trace context', function () {
  this.timeout(30_000)
  const runs: SubagentRun[] = []
  const providers: Array<{ stop?: () => Promise<void> }> = []

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    for (const provider of providers.splice(0)) await provider.stop?.()
    await reapAll()
    assertNoLeftovers()
  })

  async function echoed(overrides = {}, options = {}) {
    const provider = hostileProvider('trace', undefined, options)
    providers.push(provider as { stop?: () => Promise<void> })
    const run = await provider.start(request(overrides))
    runs.push(run)
    const result = await run.result
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    return JSON.parse(result.output) as {
      env: { traceparent: string | null; tracestate: string | null }
      newMeta: Record<string, unknown> | null
      promptMeta: Record<string, unknown> | null
    }
  }

  it('goes in session/new and session/prompt _meta and in TRACEPARENT / TRACESTATE', async () => {
    const seen = await echoed({ traceContext: { traceparent: TRACEPARENT, tracestate: TRACESTATE } })
    expect(seen.env).to.deep.equal({ traceparent: TRACEPARENT, tracestate: TRACESTATE })
    expect(seen.newMeta).to.deep.equal({ cordisSubagents: { depth: 1 }, traceparent: TRACEPARENT, tracestate: TRACESTATE })
    expect(seen.promptMeta).to.deep.equal({ traceparent: TRACEPARENT, tracestate: TRACESTATE })
  })

  it('without one, nothing is claimed, and a TRACEPARENT of this host is not passed on (even with inherit: all)', async () => {
    const saved = { parent: process.env.TRACEPARENT, state: process.env.TRACESTATE }
    process.env.TRACEPARENT = '00-11111111111111111111111111111111-2222222222222222-01'
    process.env.TRACESTATE = 'host=1'
    try {
      const seen = await echoed({}, { inherit: 'all' })
      expect(seen.env).to.deep.equal({ traceparent: null, tracestate: null })
      expect(seen.newMeta).to.deep.equal({ cordisSubagents: { depth: 1 } })
      expect(seen.promptMeta).to.equal(null)
    } finally {
      for (const [key, value] of [['TRACEPARENT', saved.parent], ['TRACESTATE', saved.state]] as const) {
        if (value === undefined) delete process.env[key]
        else process.env[key] = value
      }
    }
  })

  it('a pooled process (reuse) serves several delegations: the context goes in _meta only, not its environment', async () => {
    const seen = await echoed({ traceContext: { traceparent: TRACEPARENT } }, { reuse: true })
    expect(seen.env).to.deep.equal({ traceparent: null, tracestate: null })
    expect(seen.newMeta).to.deep.include({ traceparent: TRACEPARENT })
    expect(seen.promptMeta).to.deep.equal({ traceparent: TRACEPARENT })
  })

  it('a traceparent without tracestate sends no tracestate', async () => {
    const seen = await echoed({ traceContext: { traceparent: TRACEPARENT } })
    expect(seen.env).to.deep.equal({ traceparent: TRACEPARENT, tracestate: null })
    expect(seen.promptMeta).to.deep.equal({ traceparent: TRACEPARENT })
  })
})
