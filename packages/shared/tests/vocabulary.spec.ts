/// <reference types="mocha" />
import { expect } from 'chai'
import {
  addUsage, addWork, checkedUsage, checkedWork, countOf, describeBreach, emptyUsage, emptyWork, isCount, LimitError, limitStop,
  MAX_MESSAGE_LENGTH, totalTokens,
} from '@cordis-subagents/shared'

describe('shared vocabulary: counts, usage and work sums, limits, the message cap', () => {
  it('isCount / countOf take finite non-negative safe integers only', () => {
    for (const good of [0, 1, Number.MAX_SAFE_INTEGER]) expect(isCount(good)).to.equal(true)
    for (const bad of [-1, 1.5, NaN, Infinity, Number.MAX_SAFE_INTEGER + 1, '3', null, undefined]) {
      expect(isCount(bad)).to.equal(false)
      expect(countOf(bad)).to.equal(0)
    }
    expect(countOf(7)).to.equal(7)
  })

  it('addUsage keeps cachedInputTokens only when a side reports it; totalTokens sums input and output', () => {
    expect(addUsage(emptyUsage(), { inputTokens: 2, outputTokens: 3 })).to.deep.equal({ inputTokens: 2, outputTokens: 3 })
    expect(addUsage({ inputTokens: 1, outputTokens: 1 }, { inputTokens: 2, outputTokens: 3, cachedInputTokens: 1 }))
      .to.deep.equal({ inputTokens: 3, outputTokens: 4, cachedInputTokens: 1 })
    expect(totalTokens({ inputTokens: 5, outputTokens: 6 })).to.equal(11)
  })

  it('addWork counts only well-formed counts from outside', () => {
    expect(addWork(emptyWork(), { steps: 2, toolCalls: -4, delegations: 1.5 })).to.deep.equal({ steps: 2, toolCalls: 0, delegations: 0 })
  })

  it('checkedUsage drops malformed usage; checkedWork zeroes malformed counts', () => {
    expect(checkedUsage({ inputTokens: 1, outputTokens: 2, cachedInputTokens: -1 })).to.deep.equal({ inputTokens: 1, outputTokens: 2 })
    expect(checkedUsage({ inputTokens: 1, outputTokens: '2' })).to.equal(undefined)
    expect(checkedUsage(null)).to.equal(undefined)
    expect(checkedWork({ steps: 3, toolCalls: 'x' })).to.deep.equal({ steps: 3, toolCalls: 0, delegations: 0 })
    expect(checkedWork(undefined)).to.deep.equal({ steps: 0, toolCalls: 0, delegations: 0 })
  })

  it('limitStop maps a limit abort to timeout / budget and anything else to undefined; describeBreach words it once', () => {
    expect(limitStop(new LimitError('TIMEOUT', 't'))).to.equal('timeout')
    expect(limitStop({ code: 'BUDGET_EXCEEDED' })).to.equal('budget')
    expect(limitStop(new Error('a person'))).to.equal(undefined)
    expect(describeBreach({ budget: 'tokens', limit: 10, spent: 12 })).to.equal('the tokens budget (10 tokens; 12 spent)')
  })

  it('one message cap: about 1 MiB of UTF-16 code units', () => {
    expect(MAX_MESSAGE_LENGTH).to.equal(1024 * 1024)
  })
})
