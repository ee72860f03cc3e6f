// The served-limits rule: how serve-acp, serve-a2a and serve-mcp apply a parent's crossing to the agent they serve.
import { expect } from 'chai'
import { lowestLimits, servedLimits } from '../src/index.js'

describe('the crossing\'s served-limits rule', () => {
  it('takes the lowest of each limit; an absent one claims nothing', () => {
    expect(lowestLimits({ maxSteps: 5, maxTokens: 100 }, undefined, { maxSteps: 3, maxToolCalls: 7 }, { maxTokens: undefined }))
      .to.deep.equal({ maxSteps: 3, maxTokens: 100, maxToolCalls: 7 })
    expect(lowestLimits()).to.deep.equal({})
  })

  it('re-bases the depth ceiling onto the root depth the agent is created at', () => {
    // Root agents at depth 1; a request at depth 3 under ceiling 4 may go one level down: maxDepth 2 for an agent at depth 1.
    expect(servedLimits({ rootCrossing: {}, rootDepth: 1 }, { depth: 3, maxDepth: 4 })).to.deep.equal({ depth: 3, budget: { maxDepth: 2 } })
    // The lowest ceiling of the root crossing, the request and the host's own bound.
    const lowest = servedLimits({ rootCrossing: { maxDepth: 5 }, rootDepth: 0 }, { depth: 1, maxDepth: 6 }, { maxDepth: 4 })
    expect(lowest.budget).to.deep.equal({ maxDepth: 3 })
  })

  it('a request claiming to be shallower than the host\'s root depth runs at the root depth (the rule serve-a2a now shares)', () => {
    // Two copies used to differ here: serve-a2a took the parent's word (depth 1, children up to maxDepth 4),
    // serve-acp never went shallower than its own root depth. The deeper count is the safe one.
    const limits = servedLimits({ rootCrossing: {}, rootDepth: 2 }, { depth: 1, maxDepth: 3 })
    expect(limits).to.deep.equal({ depth: 2, budget: { maxDepth: 3 } })
    expect(servedLimits({ rootCrossing: {}, rootDepth: 2 }, { depth: 0 }, { maxDepth: 1 }).refusal).to.deep.equal({ depth: 2, ceiling: 1 })
  })

  it('refuses a request deeper than any ceiling; the request\'s budget and tool ceiling come on top of the host\'s', () => {
    expect(servedLimits({ rootCrossing: { depth: 3, maxDepth: 2 }, rootDepth: 3 }, {}).refusal).to.deep.equal({ depth: 3, ceiling: 2 })
    const limits = servedLimits({ rootCrossing: { budget: { maxSteps: 1 } }, rootDepth: 0 }, { budget: { maxSteps: 9, maxTokens: 50 }, allowedTools: ['a'] }, {
      budget: { maxSteps: 4 },
    })
    // The root crossing's budget is the runtime's to apply (to every root agent), so it is not repeated here.
    expect(limits).to.deep.equal({ depth: 0, budget: { maxSteps: 4, maxTokens: 50 }, allowedTools: ['a'] })
  })
})
