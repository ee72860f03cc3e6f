/// <reference types="mocha" />
import { expect } from 'chai'

describe('@cordis-subagents/provider-acp entry (as the loader sees it)', () => {
  it('is a namespace plugin: named name, reusable, inject, Config, apply; no default export', async () => {
    const mod = await import('@cordis-subagents/provider-acp')
    // @cordisjs/loader uses `exports.default ?? exports`: without a default it takes the namespace.
    expect(mod).to.not.have.property('default')
    expect(mod.name).to.equal('provider-acp')
    expect(mod.reusable).to.equal(true)
    expect(mod.inject).to.deep.equal(['subagents'])
    expect(mod.apply).to.be.a('function')
    expect(mod.Config).to.be.a('function')
  })

  it('exports what a user or provider author needs, and test hooks only from ./testing', async () => {
    const mod = await import('@cordis-subagents/provider-acp')
    expect(Object.keys(mod).sort()).to.deep.equal([
      'AcpError', 'Config', 'MAX_FOLLOW_UPS_PER_RUN',
      'MAX_MESSAGE_BYTES', 'MAX_QUEUED_FOLLOW_UPS', 'PROTOCOL_VERSION',
      'apply', 'cgroupBase', 'createAcpProvider', 'inject', 'liveProcessGroups', 'name', 'reusable',
    ])
    const testing = await import('@cordis-subagents/provider-acp/testing')
    expect(Object.keys(testing).sort()).to.deep.equal(['AcpRun', 'childEnv', 'secretValues'])
  })

  it('Config requires command and fills the documented defaults', async () => {
    const { Config } = await import('@cordis-subagents/provider-acp')
    expect(() => Config({} as never)).to.throw(/command/)
    expect(Config({ command: 'npx' } as never)).to.deep.equal({
      name: 'acp',
      command: 'npx',
      args: [],
      env: {},
      permission: 'reject',
      maxParkedMs: 3_600_000,
      startupTimeout: 30_000,
      cancelGrace: 5_000,
      killGrace: 3_000,
      exitGrace: 50,
      inherit: 'core',
      envExclude: [],
      maxOutputBytes: 1024 * 1024,
      maxStreamBytes: 128 * 1024 * 1024,
      containment: 'auto',
      mcpServers: [],
      sessionMeta: {},
      inheritMcpServers: false,
      warm: false,
      spares: 1,
      reuse: false,
      maxSessionsPerProcess: 16,
      maxProcesses: 4,
      idleTimeout: 60_000,
      maxSpareFailures: 3,
      resume: 'off',
      context: 'fresh',
      maxSeedBytes: 256 * 1024,
    })
    expect(() => Config({ command: 'npx', context: 'both' } as never)).to.throw(/context/)
    expect(() => Config({ command: 'npx', inherit: 'some' } as never)).to.throw(/inherit/)
    expect(() => Config({ command: 'npx', permission: 'sometimes' } as never)).to.throw(/permission/)
    expect(Config({ command: 'npx', permission: 'escalate' } as never).permission).to.equal('escalate')
    expect(Config({ command: 'x', env: { A: 'b', OPENAI_API_KEY: true, HOME: false } } as never).env)
      .to.deep.equal({ A: 'b', OPENAI_API_KEY: true, HOME: false })
  })

  it('every Config key has a description (for the Koishi console)', async () => {
    const { Config } = await import('@cordis-subagents/provider-acp')
    const dict = (Config as unknown as { dict: Record<string, { meta?: { description?: unknown } }> }).dict
    expect(Object.keys(dict)).to.have.length(31)
    for (const [key, schema] of Object.entries(dict)) {
      expect(schema.meta?.description, key).to.be.ok
    }
  })

  it('no source module imports the ACP SDK statically (it is imported lazily on the first start)', async () => {
    const { readdirSync, readFileSync } = await import('node:fs')
    const dir = new URL('../src/', import.meta.url)
    const offenders: string[] = []
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'))
    for (const file of files) {
      const source = readFileSync(new URL(file, dir), 'utf8')
      for (const line of source.split('\n')) {
        if (/^\s*import\s+(?!type\b).*['"]@agentclientprotocol\/sdk['"]/.test(line)) offenders.push(`${file}: ${line}`)
        if (/^\s*export\s+(?!type\b).*from\s+['"]@agentclientprotocol\/sdk['"]/.test(line)) offenders.push(`${file}: ${line}`)
      }
    }
    expect(offenders).to.deep.equal([])
  })
})
