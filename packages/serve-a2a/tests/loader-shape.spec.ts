/// <reference types="mocha" />
import { expect } from 'chai'
import { Service } from 'cordis'

describe('@cordis-subagents/serve-a2a entry (as the loader sees it)', () => {
  it('default-exports the A2aServer Service class, with no stray named inject/apply', async () => {
    const mod = await import('@cordis-subagents/serve-a2a')
    // @cordisjs/loader uses `exports.default ?? exports`
    expect(mod.default).to.equal(mod.A2aServer)
    expect(mod.default.prototype).to.be.instanceOf(Service)
    expect(mod.default.Config).to.equal(mod.Config)
    expect(mod.default.inject).to.deep.equal({ agents: { required: true }, tools: { required: true }, telemetry: { required: false } })
    expect(mod).to.not.have.property('inject')
    expect(mod).to.not.have.property('apply')
    expect(Object.keys(mod).sort()).to.deep.equal(['A2aServer', 'CARD_PATH', 'Config', 'JSONRPC_PATH', 'ServeA2aError', 'default', 'refusalRpcCode'])
  })

  it('Config fills the documented defaults (loopback, a free port, bearer, bounded)', async () => {
    const { Config } = await import('@cordis-subagents/serve-a2a')
    expect(Config({} as never)).to.deep.equal({
      host: '127.0.0.1',
      allowRemote: false,
      port: 0,
      auth: 'bearer',
      tokens: [],
      tokensFromEnv: [],
      apiKeyHeader: 'X-API-Key',
      allowedHosts: [],
      allowedOrigins: [],
      maxConcurrentTasks: 8,
      maxStoredTasks: 500,
      maxHistoryBytes: 1024 * 1024,
      maxFollowUpsPerTask: 4,
      taskTtl: 900_000,
      maxParkedTasks: 64,
      parkedTimeout: 86_400_000,
      askParent: false,
      askParentTool: 'ask_parent',
      maxBodyBytes: 1_048_576,
      rateLimit: 600,
      maxSubscriptions: 256,
      maxSubscriptionsPerCredential: 64,
      maxSubscriptionsPerTask: 8,
      maxConnections: 1024,
      requestTimeout: 60_000,
      name: 'cordis agent',
      description: 'An agent served by @cordis-subagents/serve-a2a.',
      skills: [],
      // Empty objects from the schema: no budget of its own, every tool.
      budget: {},
      tools: { allow: [], deny: [] },
      // Defaults of the shared store, used only when a URL is given (url / urlFromEnv): tasks stay in this process.
      shared: { schema: 'public', hostName: 'a2a-host', leaseMs: 15_000, poolSize: 4, cancelWaitMs: 10_000 },
      // No key: the card is not signed.
      signing: {},
      // Push notifications off; their bounds when a config turns them on.
      push: {
        enabled: false, allowHosts: [], allowHttp: false, timeout: 5_000, retries: 2, retryDelay: 500,
        maxBodyBytes: 1_048_576, maxConfigsPerTask: 4, maxQueued: 64,
      },
    })
  })
})
