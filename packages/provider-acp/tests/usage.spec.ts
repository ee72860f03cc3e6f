/// <reference types="mocha" />
import { expect } from 'chai'
import { readAcpUsage, readContextUsed, UsageTracker } from '../src/usage.js'

describe('provider-acp: usage reported by the agent', () => {
  it('maps ACP Usage (cachedReadTokens → cachedInputTokens) and rejects what is not a non-negative safe integer', () => {
    expect(readAcpUsage({ totalTokens: 15, inputTokens: 10, outputTokens: 5, cachedReadTokens: 2, thoughtTokens: 1 }))
      .to.deep.equal({ inputTokens: 10, outputTokens: 5, cachedInputTokens: 2 })
    for (const bad of [-1e18, 1.7e308, Infinity, NaN, -1, 1.5, '10', null]) {
      expect(readAcpUsage({ inputTokens: bad, outputTokens: 1 }), String(bad)).to.be.a('string')
      expect(readAcpUsage({ inputTokens: 1, outputTokens: 1, cachedReadTokens: bad === null ? -1 : bad }), String(bad)).to.be.a('string')
    }
    expect(readAcpUsage({ inputTokens: 5, outputTokens: 1, cachedReadTokens: 9 }))
      .to.deep.equal({ inputTokens: 5, outputTokens: 1, cachedInputTokens: 5 })
    expect(readContextUsed({ used: 1200, size: 200000 })).to.equal(1200)
    expect(readContextUsed({ used: -5, size: 1 })).to.be.a('string')
  })

  it('the tracker is cumulative: context occupancy is a floor until token usage arrives; no field ever decreases', () => {
    const tracker = new UsageTracker()
    expect(tracker.current()).to.equal(undefined)
    expect(tracker.context(1000)).to.deep.equal({ inputTokens: 1000, outputTokens: 0 })
    expect(tracker.context(800)).to.equal(undefined)
    // The agent's own figure wins from now on, but the floor already charged is not taken back.
    expect(tracker.tokens({ inputTokens: 900, outputTokens: 300 })).to.deep.equal({ inputTokens: 1000, outputTokens: 300 })
    expect(tracker.tokens({ inputTokens: 500, outputTokens: 100 })).to.equal(undefined)
    // Once the agent reports tokens, context occupancy no longer counts.
    expect(tracker.context(5000)).to.equal(undefined)
    const reported = { inputTokens: 2000, outputTokens: 400, cachedInputTokens: 50 }
    expect(tracker.tokens({ ...reported })).to.deep.equal(reported)
    expect(tracker.current()).to.deep.equal(reported)
  })
})
