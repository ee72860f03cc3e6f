/// <reference types="mocha" />
import { expect } from 'chai'
import fc from 'fast-check'
import {
  CROSSING_ENV, CROSSING_KEY, crossingEnv, crossingForFrom, crossingForMeta, crossingFromEnv, crossingFromMeta, crossingMeta, depthRefusal,
  laterSpend, MAX_ALLOWED_TOOLS, spendFromMeta, spendValue, strictestCrossing,
} from '@cordis-subagents/shared'

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'

describe('shared: the crossing (parent ⇄ child elsewhere)', () => {
  const crossing = {
    depth: 2, maxDepth: 3, budget: { maxSteps: 6, maxTokens: 1000 }, allowedTools: ['read_file', 'list_files'],
    traceparent: TRACEPARENT, tracestate: 'vendor=a',
  }

  it('what a writer puts in _meta / metadata, a reader gets back', () => {
    const meta = crossingMeta(crossing)
    expect(Object.keys(meta)).to.deep.equal([CROSSING_KEY])
    // Through JSON, as on the wire.
    expect(crossingFromMeta(JSON.parse(JSON.stringify(meta)))).to.deep.equal({ ...crossing, allowedTools: ['list_files', 'read_file'] })
  })

  const NONCE = 'nonce-of-the-direct-child'

  it('what a writer puts in the environment, a reader gets back (budget left out for a pooled process)', () => {
    const env = crossingEnv(crossing, { for: NONCE })
    expect(env).to.deep.equal({
      [CROSSING_ENV.depth]: '2', [CROSSING_ENV.maxDepth]: '3', [CROSSING_ENV.budget]: '{"maxSteps":6,"maxTokens":1000}',
      [CROSSING_ENV.allowedTools]: 'list_files,read_file', [CROSSING_ENV.crossingFor]: NONCE,
    })
    // The tool ceiling is held apart, for the process whose ACP parent names the nonce.
    expect(crossingFromEnv(env)).to.deep.equal({
      crossing: { depth: 2, maxDepth: 3, budget: { maxSteps: 6, maxTokens: 1000 } }, problems: [],
      scoped: { for: NONCE, allowedTools: ['list_files', 'read_file'] },
    })
    expect(crossingEnv(crossing, { budget: false })).to.not.have.property(CROSSING_ENV.budget)
  })

  it('issue 39: the env tool ceiling is scoped to the child its nonce names; without a nonce it is not applied', () => {
    // A writer without a nonce leaves the ceiling to `_meta`.
    expect(crossingEnv(crossing)).to.not.have.property(CROSSING_ENV.allowedTools)
    expect(crossingEnv(crossing, { for: 'short' })).to.not.have.property(CROSSING_ENV.crossingFor)
    // A variable from a parent older than the scoping is named as a problem and never applied.
    const old = crossingFromEnv({ [CROSSING_ENV.allowedTools]: 'read_file', [CROSSING_ENV.depth]: '1' })
    expect(old.crossing).to.deep.equal({ depth: 1 })
    expect(old.scoped).to.equal(undefined)
    expect(old.problems.join(' ')).to.match(/SUBAGENT_ALLOWED_TOOLS without a valid SUBAGENT_CROSSING_FOR/)
    // The nonce comes back in initialize `_meta`; anything else there is not a nonce.
    expect(crossingForFrom(JSON.parse(JSON.stringify(crossingForMeta(NONCE))))).to.equal(NONCE)
    for (const meta of [undefined, {}, { [CROSSING_KEY]: { crossingFor: 7 } }, { [CROSSING_KEY]: { crossingFor: 'x'.repeat(65) } }, crossingForMeta('a b c d e f g h i j')]) {
      expect(crossingForFrom(meta)).to.equal(undefined)
    }
  })

  it('an empty tool ceiling crosses as "no tools", never as "no ceiling"', () => {
    expect(crossingFromEnv(crossingEnv({ allowedTools: [] }, { for: NONCE })).scoped?.allowedTools).to.deep.equal([])
    expect(crossingFromMeta(crossingMeta({ allowedTools: [] })).allowedTools).to.deep.equal([])
    expect(crossingFromMeta(crossingMeta({})).allowedTools).to.equal(undefined)
  })

  it('a malformed env variable is dropped and named; the well-formed ones still apply', () => {
    const { crossing: read, problems } = crossingFromEnv({
      [CROSSING_ENV.depth]: '0x2', [CROSSING_ENV.maxDepth]: '2', [CROSSING_ENV.budget]: '{"maxSteps":-1}',
    })
    expect(read).to.deep.equal({ maxDepth: 2 })
    expect(problems).to.have.length(2)
    expect(problems.join(' ')).to.match(/SUBAGENT_DEPTH/).and.match(/SUBAGENT_BUDGET/)
    expect(crossingFromEnv({ [CROSSING_ENV.budget]: 'x'.repeat(5000) }).problems).to.have.length(1)
    // An unknown budget key from a newer parent is ignored, not a reason to drop the known ones.
    expect(crossingFromEnv({ [CROSSING_ENV.budget]: '{"maxSteps":3,"maxFuture":1}' }).crossing).to.deep.equal({ budget: { maxSteps: 3 } })
  })

  it('hostile _meta is read defensively: wrong types dropped, lists capped, bad trace context dropped', () => {
    const meta = {
      [CROSSING_KEY]: {
        depth: -1, maxDepth: 1.5, budget: { maxSteps: 'many', maxTokens: Infinity, maxToolCalls: 4 },
        allowedTools: [...Array.from({ length: 1000 }, (_, i) => `t${i}`), 'bad name', 7],
        traceparent: 'nope',
      },
    }
    const read = crossingFromMeta(meta)
    expect(read).to.not.have.any.keys('depth', 'maxDepth', 'traceparent')
    expect(read.budget).to.deep.equal({ maxToolCalls: 4 })
    expect(read.allowedTools).to.have.length(MAX_ALLOWED_TOOLS)
    for (const value of [undefined, null, 7, 'x', [], { [CROSSING_KEY]: 'x' }, { [CROSSING_KEY]: [] }]) {
      expect(crossingFromMeta(value), String(value)).to.deep.equal({})
    }
  })

  it('the strictest of several sources: lowest ceilings and limits, intersected tools, deepest depth', () => {
    const merged = strictestCrossing(
      { depth: 1, maxDepth: 4, budget: { maxSteps: 10 }, allowedTools: ['a', 'b', 'c'] },
      undefined,
      { depth: 2, maxDepth: 3, budget: { maxSteps: 6, maxTokens: 50 }, allowedTools: ['b', 'c', 'd'], traceparent: TRACEPARENT },
    )
    expect(merged).to.deep.equal({
      depth: 2, maxDepth: 3, budget: { maxSteps: 6, maxTokens: 50 }, allowedTools: ['b', 'c'], traceparent: TRACEPARENT,
    })
    fc.assert(fc.property(
      fc.array(fc.record({
        maxDepth: fc.option(fc.nat(10), { nil: undefined }), steps: fc.option(fc.nat(100), { nil: undefined }),
      }), { maxLength: 5 }),
      (sources) => {
        const out = strictestCrossing(...sources.map((s) => ({
          ...s.maxDepth === undefined ? {} : { maxDepth: s.maxDepth }, ...s.steps === undefined ? {} : { budget: { maxSteps: s.steps } },
        })))
        // Never looser than any source.
        for (const s of sources) {
          if (s.maxDepth !== undefined) expect(out.maxDepth).to.be.at.most(s.maxDepth)
          if (s.steps !== undefined) expect(out.budget?.maxSteps).to.be.at.most(s.steps)
        }
      },
    ))
  })

  it('depthRefusal: over the lowest ceiling of the crossing and the host\'s own', () => {
    expect(depthRefusal({ depth: 3, maxDepth: 2 })).to.deep.equal({ depth: 3, ceiling: 2 })
    expect(depthRefusal({ depth: 2, maxDepth: 2 })).to.equal(undefined)
    expect(depthRefusal({ depth: 2 }, 1)).to.deep.equal({ depth: 2, ceiling: 1 })
    expect(depthRefusal({ maxDepth: 0 }, 0)).to.equal(undefined)
  })

  it('spend reports: written, read back, malformed ones refused, and never going down', () => {
    const report = { tokens: 30, steps: 2, toolCalls: 3, delegations: 1, usage: { inputTokens: 20, outputTokens: 10 } }
    const meta = { [CROSSING_KEY]: { stopReason: 'completed', ...spendValue(report) } }
    expect(spendFromMeta(JSON.parse(JSON.stringify(meta)))).to.deep.equal(report)
    // tokens is at least the usage's total; cached tokens are capped at the input.
    const usage = { inputTokens: 20, outputTokens: 1, cachedInputTokens: 99 }
    expect(spendFromMeta({ [CROSSING_KEY]: { work: { steps: 1, toolCalls: 0, delegations: 0 }, tokens: 5, usage } }))
      .to.deep.equal({ tokens: 21, steps: 1, toolCalls: 0, delegations: 0, usage: { ...usage, cachedInputTokens: 20 } })
    for (const bad of [
      undefined, {}, { [CROSSING_KEY]: {} }, { [CROSSING_KEY]: { work: { steps: -1, toolCalls: 0, delegations: 0 } } },
      { [CROSSING_KEY]: { work: { steps: 1, toolCalls: 0 } } }, { [CROSSING_KEY]: { work: { steps: 1.5, toolCalls: 0, delegations: 0 } } },
    ]) expect(spendFromMeta(bad), JSON.stringify(bad)).to.equal(undefined)
    const later = laterSpend({ tokens: 50, steps: 1, toolCalls: 9, delegations: 0 }, { tokens: 40, steps: 2, toolCalls: 3, delegations: 1 })
    expect(later).to.deep.equal({ tokens: 50, steps: 2, toolCalls: 9, delegations: 1 })
  })
})

describe('shared: lazily (a slow import run once, on first use)', () => {
  it('shares one promise; a failure is forgotten so the next call tries again', async () => {
    const { lazily } = await import('@cordis-subagents/shared')
    let calls = 0
    let fail = true
    const load = lazily(async () => {
      calls++
      if (fail) throw new Error('not yet')
      return calls
    })
    const error = await load().then(() => undefined, (caught: unknown) => caught)
    expect(error).to.be.instanceOf(Error)
    fail = false
    const [a, b] = await Promise.all([load(), load()])
    expect([a, b, calls]).to.deep.equal([2, 2, 2])
    expect(await load()).to.equal(2)
  })
})
