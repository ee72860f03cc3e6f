/// <reference types="mocha" />
import { expect } from 'chai'
import { isTracestate, parseTraceparent, traceContextFrom, traceContextProblem } from '@cordis-subagents/shared'

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'

describe('shared: W3C trace context', () => {
  it('parses a version-00 traceparent', () => {
    expect(parseTraceparent(TRACEPARENT)).to.deep.equal({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', flags: 1 })
    expect(parseTraceparent(TRACEPARENT.replace(/01$/, '00'))).to.have.property('flags', 0)
  })

  it('refuses anything else: other versions, wrong lengths, uppercase, zero ids, non-strings', () => {
    for (const value of [
      undefined, 7, {}, '', `${TRACEPARENT} `, ` ${TRACEPARENT}`, TRACEPARENT.toUpperCase(), `ff${TRACEPARENT.slice(2)}`,
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
      '00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01', '00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01',
    ]) expect(parseTraceparent(value), String(value)).to.equal(undefined)
  })

  it('tracestate: members key=value, at most 32 and 512 characters, spec keys and values', () => {
    expect(isTracestate('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE')).to.equal(true)
    expect(isTracestate(' a=1 ,\tb@c=2, ,')).to.equal(true)
    expect(isTracestate(Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(','))).to.equal(true)
    for (const value of [
      '', ',', 'a', '=1', 'A=1', 'a=', 'a=1=2', 'a=x,b', 'a= ', 'a=1\n', `a=${'v'.repeat(257)}`, `a${'b'.repeat(256)}=1`,
      Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','), `a=${'v'.repeat(511)}`, 42,
    ]) expect(isTracestate(value), JSON.stringify(value)).to.equal(false)
  })

  it('traceContextFrom reads a carrier (an ACP _meta), dropping a malformed tracestate', () => {
    expect(traceContextFrom({ traceparent: TRACEPARENT, tracestate: 'k=v', other: 1 })).to.deep.equal({ traceparent: TRACEPARENT, tracestate: 'k=v' })
    expect(traceContextFrom({ traceparent: TRACEPARENT, tracestate: 'K=v' })).to.deep.equal({ traceparent: TRACEPARENT })
    expect(traceContextFrom({ traceparent: 'x' })).to.equal(undefined)
    expect(traceContextFrom(null)).to.equal(undefined)
  })

  it('traceContextProblem names the field and what is wrong', () => {
    expect(traceContextProblem({ traceparent: TRACEPARENT }, 'ctx')).to.equal(undefined)
    expect(traceContextProblem('x', 'ctx')).to.include('ctx must be an object')
    expect(traceContextProblem({ traceparent: 'x' }, 'ctx')).to.include('ctx.traceparent must be a W3C version-00 traceparent')
    expect(traceContextProblem({ traceparent: TRACEPARENT, tracestate: 'bad' }, 'ctx')).to.include('ctx.tracestate must be a W3C tracestate')
  })

  it('hostile input is refused in linear time (a 4 MiB string is rejected by its length first)', () => {
    const huge = `a=${'v'.repeat(4 << 20)}`
    const before = process.cpuUsage()
    expect(isTracestate(huge)).to.equal(false)
    expect(parseTraceparent(huge)).to.equal(undefined)
    // Bounded "it did not hang" check in CPU time (other processes' load does not count), not a speed assertion.
    const used = process.cpuUsage(before)
    expect((used.user + used.system) / 1000).to.be.below(1000)
  })
})
