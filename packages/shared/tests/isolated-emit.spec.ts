/// <reference types="mocha" />
import { expect } from 'chai'
import { Context } from 'cordis'
import { emitIsolated } from '@cordis-subagents/shared'

declare module 'cordis' {
  interface Events {
    'shared-test/ping'(value: number): void
  }
}

describe('shared: isolated emit', () => {
  it('calls every listener; a throwing or rejecting one is reported and does not stop the rest', async () => {
    const ctx = new Context()
    const seen: string[] = []
    const errors: unknown[] = []
    ctx.on('shared-test/ping', (value) => { seen.push(`a${value}`); throw new Error('a failed') })
    ctx.on('shared-test/ping', (value) => { seen.push(`b${value}`); return Promise.reject(new Error('b failed')) as never })
    ctx.on('shared-test/ping', (value) => { seen.push(`c${value}`) })
    expect(() => emitIsolated(ctx, 'shared-test/ping', [1], (error) => errors.push(error))).not.to.throw()
    await new Promise((resolve) => setImmediate(resolve))
    expect(seen).to.deep.equal(['a1', 'b1', 'c1'])
    expect(errors.map((error) => (error as Error).message)).to.deep.equal(['a failed', 'b failed'])
  })

  it('skips a listener an earlier listener removed, and does nothing without listeners', () => {
    const ctx = new Context()
    const seen: string[] = []
    let second: () => void = () => {}
    ctx.on('shared-test/ping', () => { seen.push('first'); second() })
    second = ctx.on('shared-test/ping', () => { seen.push('second') })
    emitIsolated(ctx, 'shared-test/ping', [1], () => {})
    expect(seen).to.deep.equal(['first'])
    emitIsolated(ctx, 'shared-test/none', [], () => { throw new Error('never') })
  })
})
