/// <reference types="mocha" />
// Warm spares under bursts (issue 27, item 9): a spare's replacement starts when a run takes it,
// so runs that follow at once (closer together than a start takes) still get a warm process, and
// `spares` stay ready. The fixture answers initialize after a delay (a slow real adapter); what is
// asserted is which kind of process each run got and what the pool holds, never how long it took.
import { expect } from 'chai'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import type { AcpProvider } from '../src/index.js'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { assertNoLeftovers, fixtureProcesses, fixtureProvider, request, until } from './helpers.js'

describe('provider-acp: warm spares under bursts', function () {
  this.timeout(60_000)
  const runs: SubagentRun[] = []
  const providers: AcpProvider[] = []

  function provider(spares: number): AcpProvider {
    const created = fixtureProvider('sessions', undefined, { warm: true, spares, maxProcesses: 8, env: { ACP_FIXTURE_INIT_DELAY: '300' } })
    providers.push(created)
    return created
  }

  let counter = 0
  /** `wait` keeps the run busy until it is cancelled (the after-each dispose does); `answer` completes. */
  async function start(acp: AcpProvider, prompt = 'answer'): Promise<AcpRun> {
    const run = await acp.start(request({ prompt, runId: `burst-${++counter}` })) as AcpRun
    runs.push(run)
    return run
  }

  /** The first run is cold (the pool learns what to spawn from it); then `spares` spares come up. */
  async function warmedUp(spares: number): Promise<AcpProvider> {
    const acp = provider(spares)
    const first = await start(acp)
    expect(first.processKind).to.equal('cold')
    await first.result
    await first.dispose()
    await until(() => acp.pool!.counts().idle === spares && acp.pool!.counts().starting === 0, `${spares} idle spare(s)`, 20_000)
    return acp
  }

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await Promise.all(providers.splice(0).map((acp) => acp.stop()))
    assertNoLeftovers()
  })

  it('spares: 1, two delegations at once: both get a warm process (the second the replacement started at the take)', async () => {
    const acp = await warmedUp(1)
    const burst = await Promise.all([start(acp), start(acp)])
    expect(burst.map((run) => run.processKind)).to.deep.equal(['warm', 'warm'])
    expect(new Set(burst.map((run) => run.pid)).size).to.equal(2)
    for (const run of burst) expect((await run.result).stopReason).to.equal('completed')
    // And the next spare is on its way again.
    await until(() => acp.pool!.counts().idle === 1, 'a spare ready again', 20_000)
  })

  it('spares: 2, three delegations at once: all warm, and two spares are ready beside the three runs', async () => {
    const acp = await warmedUp(2)
    const burst = await Promise.all([start(acp, 'wait'), start(acp, 'wait'), start(acp, 'wait')])
    expect(burst.map((run) => run.processKind)).to.deep.equal(['warm', 'warm', 'warm'])
    // A spare a run waits for is not counted as ready: its replacement started when it was claimed.
    const { busy, idle, starting } = acp.pool!.counts()
    expect(busy).to.equal(3)
    expect(idle + starting, 'spares ready or starting beside the burst').to.equal(2)
    await until(() => acp.pool!.counts().idle === 2, 'two idle spares', 20_000)
    // Nothing beyond the three runs and the two spares was started.
    expect(fixtureProcesses()).to.have.length(5)
  })
})
