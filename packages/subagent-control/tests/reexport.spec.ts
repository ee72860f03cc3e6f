/// <reference types="mocha" />
import { expect } from 'chai'

describe('@cordis-subagents/subagent-control (deprecated name, as the loader sees it)', () => {
  it('is the control entry of subagent-tool, re-exported unchanged: same plugin, no default export', async () => {
    const old = await import('@cordis-subagents/subagent-control')
    const control = await import('@cordis-subagents/subagent-tool/control')
    expect(old).to.not.have.property('default')
    expect(Object.keys(old).sort()).to.deep.equal(['Config', 'apply', 'inject', 'name', 'reusable'])
    expect(old.apply).to.equal(control.apply)
    expect(old.Config).to.equal(control.Config)
    expect(old.name).to.equal('subagent-control')
    expect(old.inject).to.deep.equal(['tools', 'subagents'])
    expect(old.reusable).to.equal(true)
  })
})
