/// <reference types="mocha" />
import { expect } from 'chai'

describe('@cordis-subagents/provider-a2a entry (as the loader sees it)', () => {
  it('is a namespace plugin: named name, reusable, inject, Config, apply; no default export', async () => {
    const mod = await import('@cordis-subagents/provider-a2a')
    // @cordisjs/loader uses `exports.default ?? exports`: without a default it takes the namespace.
    expect(mod).to.not.have.property('default')
    expect(mod.name).to.equal('provider-a2a')
    expect(mod.reusable).to.equal(true)
    expect(mod.inject).to.deep.equal(['subagents'])
    expect(mod.apply).to.be.a('function')
    expect(mod.Config).to.be.a('function')
    expect(Object.keys(mod).sort()).to.deep.equal([
      'A2aError', 'AGENT_CARD_PATH', 'Config', 'SUPPORTED_BINDINGS', 'SUPPORTED_BINDINGS_V03', 'apply', 'createA2aProvider', 'inject', 'name', 'reusable',
    ])
  })

  it('Config fills the documented defaults (url or urls, exactly one, is checked at load: see pool-config.slow.spec.ts)', async () => {
    const { Config } = await import('@cordis-subagents/provider-a2a')
    expect(Config({ urls: ['http://127.0.0.1:41241'] })).to.include.keys('urls').and.not.include.keys('url')
    expect(Config({ url: 'http://127.0.0.1:41241' })).to.deep.equal({
      name: 'a2a',
      url: 'http://127.0.0.1:41241',
      headersFromEnv: {},
      allowHttp: false,
      allowCrossOrigin: false,
      cardTimeout: 10_000,
      requestTimeout: 30_000,
      idleTimeout: 300_000,
      pollInterval: 1_000,
      stuckTimeout: 600_000,
      cancelGrace: 5_000,
      parkedTimeout: 86_400_000,
      cardRefreshInterval: 60_000,
      retryDelay: 1_000,
      maxResponseBytes: 4 * 1024 * 1024,
      maxStreamBytes: 64 * 1024 * 1024,
      maxOutputBytes: 1024 * 1024,
    })
  })
})
