/// <reference types="mocha" />
import { expect } from 'chai'
import { Service } from 'cordis'

describe('@cordis-subagents/mcp entries (as the loader sees them)', () => {
  it('the client is a reusable namespace plugin (name, inject, Config, apply), no default export', async () => {
    const mod = await import('@cordis-subagents/mcp')
    expect(mod).to.not.have.property('default')
    expect(mod.name).to.equal('mcp-client')
    expect(mod.reusable).to.equal(true)
    expect(mod.inject).to.deep.equal({ tools: { required: true }, mcp: { required: false } })
    expect(mod.apply).to.be.a('function')
    expect(() => mod.Config({} as never)).to.throw(/name/)
    const config = mod.Config({ name: 'files', command: 'node' })
    expect(config).to.include({ name: 'files', command: 'node', inherit: 'core', startupTimeout: 30_000, callTimeout: 120_000, maxContentParts: 16 })
    expect(config.allow).to.equal(undefined)
    expect(() => mod.Config({ name: 'a__b', command: 'node' })).to.throw()
  })

  it('servers default-exports a Service class (the loader takes default)', async () => {
    const servers = await import('@cordis-subagents/mcp/servers')
    expect(servers.default.prototype).to.be.instanceOf(Service)
  })
})
