/// <reference types="mocha" />
// An agent that stops reading its stdin while it sends requests: each request is answered, and the answers
// wait for it. They used to queue in the SDK without a bound (7 MiB of requests raised the heap by hundreds
// of MiB); past the input backlog bound the run ends ACP_INPUT_BACKLOG and the process group is stopped.
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { within } from '@cordis-subagents/test-support'
import { type AcpProvider, createAcpProvider, type AcpProviderOptions } from '../src/index.js'
import { assertNoLeftovers, FAST, heartbeat, isAlive, logger, rejection, request } from './helpers.js'

const DEAF = fileURLToPath(new URL('./fixtures/deaf.mjs', import.meta.url))
/** The documented bound (README: Limits). */
const BOUND = 8 * 1024 * 1024
const MIB = 1024 * 1024
/** Requests the fixture sends (about 18 MB; their answers are about 2.5 times that). */
const FLOOD = '400000'

describe('provider-acp: an agent that stops reading its stdin (the input backlog bound)', function () {
  this.timeout(120_000)
  const providers: AcpProvider[] = []
  const runs: SubagentRun[] = []

  function provider(mode: string, arg?: string, options: Partial<AcpProviderOptions> = {}) {
    const acp = createAcpProvider({
      command: process.execPath, args: arg === undefined ? [DEAF, mode] : [DEAF, mode, arg], logger, ...FAST, ...options, env: FAST.env,
    })
    providers.push(acp)
    return acp
  }

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await Promise.all(providers.splice(0).map((acp) => acp.stop()))
    assertNoLeftovers()
  })

  it('deaf mid-turn while flooding requests: the run ends ACP_INPUT_BACKLOG naming the bound, memory stays bounded, the process is reaped', async () => {
    const acp = provider('deaf-requests', FLOOD)
    // The SDK's first import is not the flood's memory.
    const warm = await acp.start(request({ runId: 'warm-up' }))
    runs.push(warm)
    await warm.result
    const beat = heartbeat()
    try {
      const run = await acp.start(request({ runId: 'deaf' })) as AcpRun
      runs.push(run)
      const result = await within(run.result, 60_000, 'the deaf run\'s result')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.match(new RegExp(`^\\[ACP_INPUT_BACKLOG\\] The agent stopped reading its stdin: more than ${BOUND} bytes `))
      // The answers waiting are at most the bound (plus what the pipe and the bookkeeping hold); they used to be all of them
      // (the audit measured 235 MiB of heap per 200,000 unread answers). ~70 MiB on a quiet machine; the peak of RSS also
      // holds what the collector has not returned yet, which on a loaded one (CI: two mocha workers) reached 166 MiB.
      expect(beat.peakRssGrowth(), 'RSS growth (bytes)').to.be.below(300 * MIB)
      await acp.reaped()
      expect(isAlive(run.pid!), 'the deaf agent after the hand-back').to.equal(false)
    } finally {
      beat.stop()
    }
  })

  it('deaf during initialize while flooding requests: start rejects ACP_INPUT_BACKLOG, nothing is left', async () => {
    const acp = provider('deaf-at-init', FLOOD, { startupTimeout: 110_000 })
    const error = await rejection(within(acp.start(request({ runId: 'deaf-init' })), 60_000, 'the start'))
    expect(error.code, error.message).to.equal('ACP_INPUT_BACKLOG')
    expect(error.message).to.match(new RegExp(`failed during initialize: The agent stopped reading its stdin: more than ${BOUND} bytes `))
  })

  it('a prompt larger than the bound reaches an agent that reads it: the bound counts beyond the largest message', async () => {
    const acp = provider('plain')
    const prompt = 'p'.repeat(BOUND + MIB)
    const run = await acp.start(request({ runId: 'large', prompt }))
    runs.push(run)
    const result = await within(run.result, 60_000, 'the large prompt\'s result')
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    const [, length] = /^ok \d+ (\d+)$/.exec(result.output) ?? []
    expect(Number(length)).to.be.at.least(prompt.length)
  })
})
