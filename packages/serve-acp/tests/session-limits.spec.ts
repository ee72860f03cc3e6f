// What a session is held to, from the env crossing, the session's `_meta` and the config.
import { expect } from 'chai'
import { sessionLimits } from '../src/session-limits.js'

const TRACE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'

describe('serve-acp session limits', () => {
  it('a session deeper than ctx.agents\' root depth gets its children\'s ceiling lowered by the difference', () => {
    // Root agents here are at depth 1 (SUBAGENT_DEPTH of the process); this session is at depth 3
    // (a pooled process serving a deeper delegation). Ceiling 4: its children may go 1 level down,
    // which for an agent created at depth 1 is maxDepth 2.
    const limits = sessionLimits({ cordisSubagents: { depth: 3 } }, { depth: 1 }, 1, { maxDepth: 4 })
    expect(limits).to.deep.equal({ depth: 3, budget: { maxDepth: 2 } })
  })

  it('the lowest ceiling and budget of env, _meta and config; a session over the ceiling is refused', () => {
    const env = { depth: 2, maxDepth: 5, budget: { maxSteps: 10 }, allowedTools: ['a', 'b'] }
    const limits = sessionLimits({ cordisSubagents: { maxDepth: 4, budget: { maxSteps: 20, maxTokens: 100 }, allowedTools: ['b', 'c'] } }, env, 2, {
      maxDepth: 6, budget: { maxToolCalls: 7, maxTokens: 500 },
    })
    // The env budget and tool ceiling are applied by ctx.agents itself; the session adds its own.
    expect(limits).to.deep.equal({ depth: 2, budget: { maxToolCalls: 7, maxTokens: 100, maxSteps: 20, maxDepth: 4 }, allowedTools: ['b', 'c'] })
    expect(sessionLimits({ cordisSubagents: { depth: 5 } }, env, 2, { maxDepth: 4 }).refusal).to.deep.equal({ depth: 5, ceiling: 4 })
    expect(sessionLimits({}, { depth: 3, maxDepth: 2 }, 3, { maxDepth: 9 }).refusal).to.deep.equal({ depth: 3, ceiling: 2 })
  })

  it('the trace context of _meta (top level, else the crossing\'s); malformed parts are dropped', () => {
    expect(sessionLimits({ traceparent: TRACE }, {}, 0, { maxDepth: 3 }).trace).to.deep.equal({ traceparent: TRACE })
    expect(sessionLimits({ cordisSubagents: { traceparent: TRACE } }, {}, 0, { maxDepth: 3 }).trace).to.deep.equal({ traceparent: TRACE })
    expect(sessionLimits({ traceparent: 'nope', cordisSubagents: { depth: -1, budget: { maxSteps: 'x' }, allowedTools: 'a' } }, {}, 0, { maxDepth: 3 }))
      .to.deep.equal({ depth: 0, budget: { maxDepth: 3 }, allowedTools: ['a'] })
  })
})
