/// <reference types="mocha" />
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'

describe('test-support: eventually', () => {
  it('returns the first truthy value of the check, polling until it comes', async () => {
    let calls = 0
    const value = await eventually(() => ++calls >= 3 && { calls }, 'third call', { every: 1 })
    expect(value).to.deep.equal({ calls: 3 })
    expect(calls).to.equal(3)
  })

  it('awaits an async check', async () => {
    let calls = 0
    expect(await eventually(async () => ++calls === 2 ? 'ready' : '', 'async check', { every: 1 })).to.equal('ready')
  })

  it('throws naming what never happened once the bound passed (the timeout alone as a number too)', async () => {
    const error = await eventually(() => false, 'the door opens', 30).then(() => undefined, (e: Error) => e)
    expect(error?.message).to.equal('the door opens: not within 30 ms')
  })

  it('a check that throws ends the wait with its error', async () => {
    const error = await eventually(() => { throw new Error('broken check') }, 'x').then(() => undefined, (e: Error) => e)
    expect(error?.message).to.equal('broken check')
  })
})
