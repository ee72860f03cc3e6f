/// <reference types="mocha" />
import { expect } from 'chai'

describe('@cordis-subagents/serve-acp entry (as the loader sees it)', () => {
  it('is a namespace plugin: named name, inject, Config, apply; no default export; not reusable (one stdio)', async () => {
    const mod = await import('@cordis-subagents/serve-acp')
    // @cordisjs/loader uses `exports.default ?? exports`: without a default it takes the namespace.
    expect(mod).to.not.have.property('default')
    expect(mod.name).to.equal('serve-acp')
    expect(mod.inject).to.deep.equal(['agents', 'tools'])
    expect(mod).to.not.have.property('reusable')
    expect(mod.apply).to.be.a('function')
    expect(mod.Config).to.be.a('function')
    expect(Object.keys(mod).sort()).to.deep.equal(['Config', 'ServeAcpError', 'apply', 'holdExit', 'inject', 'name'])
    const testing = await import('@cordis-subagents/serve-acp/testing')
    expect(Object.keys(testing).sort()).to.deep.equal([
      'DEFAULT_STORE_LIMITS', 'SessionStore', 'isSessionId', 'newSessionId',
    ])
  })

  it('Config fills the documented defaults and adds no keys for omitted options', async () => {
    const { Config } = await import('@cordis-subagents/serve-acp')
    expect(Config({})).to.deep.equal({
      name: 'cordis-subagents',
      maxDepth: 3,
      maxSessions: 16,
      maxRequestsInFlight: 256,
      loadSession: true,
      maxStoredSessions: 100,
      maxSessionBytes: 4 * 1024 * 1024,
      maxPromptChars: 1024 * 1024,
      mcpServers: { stdio: true, http: true, maxServers: 8, inherit: 'core', startupTimeout: 30_000, callTimeout: 120_000 },
      closeGrace: 2_000,
    })
    expect(Config({ mcpServers: { stdio: false, commands: ['npx'] } as never }).mcpServers).to.include({ stdio: false, http: true, maxServers: 8 })
    expect(() => Config({ mcpServers: { inherit: 'some' } as never })).to.throw()
    expect(Config({ tools: { deny: ['secret'] } }).tools).to.deep.equal({ deny: ['secret'] })
    expect(() => Config({ maxSessions: 0 })).to.throw()
    expect(() => Config({ maxRequestsInFlight: 0 })).to.throw()
    expect(Config({ closeGrace: 0 }).closeGrace).to.equal(0)
    expect(() => Config({ closeGrace: 60_001 })).to.throw()
    expect(() => Config({ tools: { allow: ['not a name'] } })).to.throw()
  })

  it('every Config key has a description (for the Koishi console)', async () => {
    const { Config } = await import('@cordis-subagents/serve-acp')
    const dict = (Config as unknown as { dict: Record<string, { meta?: { description?: unknown } }> }).dict
    expect(Object.keys(dict)).to.have.length(18)
    for (const [key, schema] of Object.entries(dict)) expect(schema.meta?.description, key).to.be.ok
  })

  it('no source module imports the ACP SDK statically (it is imported lazily when the plugin starts)', async () => {
    const { readdirSync, readFileSync } = await import('node:fs')
    const dir = new URL('../src/', import.meta.url)
    const offenders: string[] = []
    for (const file of readdirSync(dir)) {
      for (const line of readFileSync(new URL(file, dir), 'utf8').split('\n')) {
        // Static forms only: `import … from`, a bare `import '…'`, `export … from` (a dynamic import() is the lazy path).
        if (/^\s*import\s+(?!type\b).*['"]@agentclientprotocol\/sdk['"]/.test(line)) offenders.push(`${file}: ${line}`)
        if (/^\s*export\s+(?!type\b).*from\s+['"]@agentclientprotocol\/sdk['"]/.test(line)) offenders.push(`${file}: ${line}`)
      }
    }
    expect(offenders).to.deep.equal([])
  })
})
