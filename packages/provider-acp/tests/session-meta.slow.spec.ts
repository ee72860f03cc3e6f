/// <reference types="mocha" />
// config.sessionMeta goes in `_meta` of session/new beside the provider's own keys (the crossing,
// the trace context), for a process started for the run and for a warm spare that opens its
// session ahead (the run that takes the spare gets that session, with it).
import { expect } from 'chai'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import { assertNoLeftovers, hostileProvider, reapAll, request, until } from './helpers.js'

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
const CONFIGURED = { claudeCode: { options: { executableArgs: ['--no-lazy'] } }, note: 'set by the load' }

describe('provider-acp: sessionMeta', function () {
  this.timeout(30_000)
  const runs: SubagentRun[] = []
  const providers: Array<{ stop?: () => Promise<void> }> = []

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    for (const provider of providers.splice(0)) await provider.stop?.()
    await reapAll()
    assertNoLeftovers()
  })

  async function echoed(provider: ReturnType<typeof hostileProvider>, overrides = {}) {
    const run = await provider.start(request(overrides))
    runs.push(run)
    const result = await run.result
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    return JSON.parse(result.output) as { pid: number; newMeta: Record<string, unknown> | null }
  }

  it('a process started for the run: session/new carries it beside the crossing and the trace context', async () => {
    const provider = hostileProvider('trace', undefined, { sessionMeta: CONFIGURED })
    providers.push(provider)
    const seen = await echoed(provider, { traceContext: { traceparent: TRACEPARENT } })
    expect(seen.newMeta).to.deep.equal({ ...CONFIGURED, cordisSubagents: { depth: 1 }, traceparent: TRACEPARENT })
  })

  it('a warm spare opens its session ahead with it, and the run that takes the spare has it', async () => {
    const provider = hostileProvider('trace', undefined, { sessionMeta: CONFIGURED, warm: true, spares: 1 })
    providers.push(provider)
    const first = await echoed(provider)
    expect(first.newMeta).to.deep.equal({ ...CONFIGURED, cordisSubagents: { depth: 1 } })
    const [spare] = await until(() => {
      const idle = provider.pool!.idlePids()
      return idle.length === 1 && provider.pool!.counts().starting === 0 ? idle : undefined
    }, 'the spare to open its session ahead')
    const second = await echoed(provider)
    expect(second.pid, 'the run took the spare').to.equal(spare)
    expect(second.pid).to.not.equal(first.pid)
    expect(second.newMeta).to.deep.equal({ ...CONFIGURED, cordisSubagents: { depth: 1 } })
  })

  it('without it, session/new carries only the provider\'s own keys', async () => {
    const provider = hostileProvider('trace')
    providers.push(provider)
    const seen = await echoed(provider)
    expect(seen.newMeta).to.deep.equal({ cordisSubagents: { depth: 1 } })
  })
})
