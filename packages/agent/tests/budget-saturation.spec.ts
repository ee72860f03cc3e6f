/// <reference types="mocha" />
// Issue 39 item 14: a budget's spend stays a safe integer however much is charged, and a reported
// running total is charged at most MAX_REPORTED_COUNT, the breach naming the clamped report.
import { expect } from 'chai'
import { MAX_REPORTED_COUNT } from '@cordis-subagents/shared'
import { Budget } from '@cordis-subagents/agent'

const HUGE = Number.MAX_SAFE_INTEGER

describe('Budget: saturating spend, clamped reports', () => {
  it('charges saturate at Number.MAX_SAFE_INTEGER on the run, the binding ancestors and the root', () => {
    const root = Budget.root({ maxTokens: HUGE })
    const child = root.child({ maxTokens: HUGE - 1 })
    child.charge('tokens', HUGE)
    child.charge('tokens', HUGE)
    for (const budget of [root, child]) expect(budget.spent.tokens).to.equal(HUGE)
  })

  it('a reported total over MAX_REPORTED_COUNT is charged as MAX_REPORTED_COUNT and the breach says it was clamped', () => {
    const root = Budget.root({ maxTokens: 1000, maxSteps: HUGE })
    const remote = root.child()
    remote.chargeTokensUpTo(2 * HUGE)
    remote.chargeUpTo('steps', 5)
    expect(root.spent.tokens).to.equal(MAX_REPORTED_COUNT)
    expect(remote.exceeded()).to.deep.equal({ budget: 'tokens', limit: 1000, spent: MAX_REPORTED_COUNT, clamped: true })
    const honest = Budget.root({ maxTokens: 10 }).child()
    honest.chargeTokensUpTo(11)
    expect(honest.exceeded()).to.deep.equal({ budget: 'tokens', limit: 10, spent: 11 })
  })
})
