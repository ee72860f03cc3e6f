/// <reference types="mocha" />
import { expect } from 'chai'
import { count, countProblem, duration, durationProblem, MAX_TIMER_MS } from '@cordis-subagents/shared'

describe('shared: bounded durations and counts', () => {
  it('duration() accepts 0 to 2^31-1 ms and refuses what a Node timer cannot honour', () => {
    const schema = duration()
    expect(schema(0)).to.equal(0)
    expect(schema(MAX_TIMER_MS)).to.equal(MAX_TIMER_MS)
    for (const bad of [MAX_TIMER_MS + 1, 1e12, 1e300, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => schema(bad), String(bad)).to.throw()
    }
    expect(() => duration({ min: 1 })(0)).to.throw()
    expect(() => duration({ max: 60_000 })(60_001)).to.throw()
    expect(() => duration({ max: 1e15 })(MAX_TIMER_MS + 1)).to.throw() // a max above the timer limit is capped
  })

  it('count() accepts safe integers only', () => {
    const schema = count({ min: 1 })
    expect(schema(1)).to.equal(1)
    expect(schema(Number.MAX_SAFE_INTEGER)).to.equal(Number.MAX_SAFE_INTEGER)
    for (const bad of [0, 1e300, Number.MAX_SAFE_INTEGER + 2, 2.5, -3]) expect(() => schema(bad), String(bad)).to.throw()
  })

  it('the problem functions say the same for programmatic options, naming the option', () => {
    expect(durationProblem('startupTimeout', 30_000, { min: 1 })).to.equal(undefined)
    expect(durationProblem('startupTimeout', 1e12, { min: 1 }))
      .to.equal('startupTimeout must be an integer from 1 to 2147483647 ms, got 1000000000000.')
    expect(durationProblem('cancelGrace', '5s')).to.equal('cancelGrace must be an integer from 0 to 2147483647 ms, got "5s".')
    expect(countProblem('depth', 1e300)).to.match(/^depth must be an integer from 0 to 9007199254740991, got 1e\+300\.$/)
    expect(countProblem('maxSteps', 3, { min: 1 })).to.equal(undefined)
  })
})

describe('shared: choice()', () => {
  it('accepts exactly the named choices and carries their descriptions', async () => {
    const { choice } = await import('@cordis-subagents/shared')
    const schema = choice({ reject: 'Deny', allow: 'Allow once' })
    expect(schema('reject')).to.equal('reject')
    expect(schema('allow')).to.equal('allow')
    expect(() => schema('maybe' as never)).to.throw()
    expect(schema.list?.map((item) => [item.value, item.meta.description])).to.deep.equal([['reject', 'Deny'], ['allow', 'Allow once']])
  })
})
