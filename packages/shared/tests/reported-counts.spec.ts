/// <reference types="mocha" />
// Issue 39 item 14: a count from outside is capped per report; sums of counts saturate.
import { expect } from 'chai'
import {
  addCounts, addUsage, addWork, checkedUsage, checkedWork, describeBreach, emptyWork, MAX_REPORTED_COUNT, reportedCount, spendFromMeta,
  totalTokens,
} from '@cordis-subagents/shared'

const HUGE = Number.MAX_SAFE_INTEGER

describe('shared: reported counts are capped per report, sums stay safe integers', () => {
  it('reportedCount clamps a safe count to MAX_REPORTED_COUNT and refuses anything else', () => {
    expect(reportedCount(7)).to.equal(7)
    expect(reportedCount(HUGE)).to.equal(MAX_REPORTED_COUNT)
    for (const bad of [-1, 1.5, NaN, Infinity, HUGE + 2, 1e300, '3', null]) expect(reportedCount(bad), String(bad)).to.equal(undefined)
  })

  it('addCounts, addUsage, addWork and totalTokens saturate at Number.MAX_SAFE_INTEGER', () => {
    expect(addCounts(HUGE, HUGE)).to.equal(HUGE)
    const earlier = { inputTokens: HUGE, outputTokens: 1, cachedInputTokens: HUGE }
    expect(addUsage(earlier, { inputTokens: HUGE, outputTokens: 2, cachedInputTokens: 1 }))
      .to.deep.equal({ inputTokens: HUGE, outputTokens: 3, cachedInputTokens: HUGE })
    expect(totalTokens({ inputTokens: HUGE, outputTokens: HUGE })).to.equal(HUGE)
    const work = addWork({ steps: HUGE, toolCalls: 0, delegations: 0 }, { steps: HUGE, toolCalls: HUGE, delegations: 1 })
    expect(work).to.deep.equal({ steps: HUGE, toolCalls: MAX_REPORTED_COUNT, delegations: 1 })
    expect(addWork(emptyWork(), { steps: HUGE })).to.deep.equal({ steps: MAX_REPORTED_COUNT, toolCalls: 0, delegations: 0 })
  })

  it('usage, work and spend reports from outside are clamped field by field', () => {
    expect(checkedUsage({ inputTokens: HUGE, outputTokens: HUGE, cachedInputTokens: HUGE }))
      .to.deep.equal({ inputTokens: MAX_REPORTED_COUNT, outputTokens: MAX_REPORTED_COUNT, cachedInputTokens: MAX_REPORTED_COUNT })
    expect(checkedWork({ steps: HUGE, toolCalls: -1, delegations: HUGE + 2 }))
      .to.deep.equal({ steps: MAX_REPORTED_COUNT, toolCalls: 0, delegations: 0 })
    const usage = { inputTokens: HUGE, outputTokens: HUGE, cachedInputTokens: HUGE }
    const report = spendFromMeta({ cordisSubagents: { work: { steps: HUGE, toolCalls: HUGE, delegations: HUGE }, tokens: HUGE, usage } })
    const max = MAX_REPORTED_COUNT
    expect(report).to.deep.equal({
      tokens: max, steps: max, toolCalls: max, delegations: max, usage: { inputTokens: max, outputTokens: max, cachedInputTokens: max },
    })
    expect(spendFromMeta({ cordisSubagents: { work: { steps: 1.5, toolCalls: 0, delegations: 0 } } })).to.equal(undefined)
  })

  it('a breach counting a clamped report says so', () => {
    expect(describeBreach({ budget: 'tokens', limit: 1000, spent: MAX_REPORTED_COUNT, clamped: true })).to.equal(
      `the tokens budget (1000 tokens; ${MAX_REPORTED_COUNT} spent, counting a report from a child elsewhere clamped to the per-report `
      + `maximum of ${MAX_REPORTED_COUNT} tokens)`)
    expect(describeBreach({ budget: 'steps', limit: 2, spent: 3 })).to.equal('the steps budget (2 model calls; 3 spent)')
  })
})
