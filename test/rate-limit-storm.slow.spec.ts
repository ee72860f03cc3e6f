// Issue 44 item 2: a 32-wide fan-out (real Context, subagent-tool → spawn, model-openai) against a
// loopback OpenAI-compatible server that answers 429 with Retry-After past 4 completions per second
// (bench/scenarios/rate-limit.ts). With the model gate's shared backoff no child fails, and once the
// first refusal has lowered the endpoint's concurrency the server never sees more than that
// concurrency plus its allowance in a window; with the gate off the storm shows. With a call rate
// below the server's allowance (`maxModelCallsPerSecond`), the server sees at most its allowance in
// every window, from the first on (counted by the server, per window).
import { expect } from 'chai'
import { FAN_OUT, storm, type StormResult } from '../bench/scenarios/rate-limit.js'

const LIMITS = { perWindow: 4, windowMs: 1000 }
/** The same retry budget for a call either way: the gate's, or the OpenAI SDK's own. */
const RETRIES = 12
/**
 * The gate's call rate: below the server's 4 a window, as the README advises (the gate paces when calls are sent;
 * the way to the server may bunch two of them), so one call a window is the slack for that, not for the gate.
 */
const PER_SECOND = 3

/** The most requests any window after the lowered concurrency took hold received (windows from firstRefusal + 2 on). */
function laterPeak(result: StormResult): number {
  const { perWindow, firstRefusal } = result.traffic
  return Math.max(0, ...Array.from(perWindow.slice((firstRefusal ?? 0) + 2), (count) => count ?? 0))
}

describe('a 429 storm on a 32-wide fan-out, absorbed by the model gate\'s one shared backoff', function () {
  this.timeout(120_000)
  let gated: StormResult
  let ungated: StormResult
  let paced: StormResult

  before(async () => {
    gated = await storm(true, LIMITS, RETRIES)
    ungated = await storm(false, LIMITS, RETRIES)
    paced = await storm(true, LIMITS, RETRIES, PER_SECOND)
    if (process.env.STORM_LOG) console.log(JSON.stringify({ gated, ungated, paced }))
  })

  it('with the gate: every child completes, and the server sees at most the lowered concurrency plus its allowance per window', () => {
    expect(gated.traffic.refused, 'the limit was hit').to.be.above(0)
    expect(gated.stopReason).to.equal('completed')
    expect(gated.failedChildren).to.equal(0)
    expect(gated.text).to.equal('all parts done')
    // 1 root call, 32 children, 1 root call accepted; the rest were refusals.
    expect(gated.traffic.requests - gated.traffic.refused).to.equal(FAN_OUT + 2)
    // The first refusal halves the concurrency from at most 33 in flight: 16, plus the 4 a window accepts.
    expect(laterPeak(gated)).to.be.at.most(Math.floor((FAN_OUT + 1) / 2) + LIMITS.perWindow)
    // Waiting is reported apart from work.
    expect(gated.rateLimitWaitMs).to.be.above(0)
  })

  it('without the gate: the storm (each call retries on its own), many more refusals for the same work', () => {
    expect(ungated.traffic.requests - ungated.traffic.refused).to.equal(FAN_OUT + 2)
    expect(ungated.rateLimitWaitMs).to.equal(undefined)
    expect(ungated.traffic.refused).to.be.above(gated.traffic.refused * 1.5)
    expect(laterPeak(ungated)).to.be.above(laterPeak(gated))
  })

  it(`with a call rate (maxModelCallsPerSecond ${PER_SECOND}): every child completes, and no window of the server gets more than its ${LIMITS.perWindow}`, () => {
    expect(paced.stopReason).to.equal('completed')
    expect(paced.failedChildren).to.equal(0)
    expect(paced.traffic.requests - paced.traffic.refused).to.equal(FAN_OUT + 2)
    const windows = Array.from(paced.traffic.perWindow, (count) => count ?? 0)
    // Paced from the first window on: 34 calls over at least ceil(34 / 3) windows, none over the allowance.
    expect(windows.length).to.be.at.least(Math.ceil((FAN_OUT + 2) / PER_SECOND))
    expect(Math.max(...windows), JSON.stringify(windows)).to.be.at.most(LIMITS.perWindow)
    // The storm without a rate: its first window takes the whole fan-out.
    expect(Math.max(...Array.from(gated.traffic.perWindow, (count) => count ?? 0))).to.be.above(LIMITS.perWindow)
  })
})
