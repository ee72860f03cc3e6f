/// <reference types="mocha" />
import { expect } from 'chai'
import { Service } from 'cordis'

describe('@cordis-subagents/serve-mcp entry (as the loader sees it)', () => {
  it('default-exports the Service class (the loader takes default), with its Config', async () => {
    const serve = await import('@cordis-subagents/serve-mcp')
    expect(serve.default.prototype).to.be.instanceOf(Service)
    expect(serve.default).to.equal(serve.McpServe)
    expect(serve.default.inject).to.deep.equal(['tools', 'agents'])
    expect(serve.Config({} as never)).to.include({ transport: 'http', host: '127.0.0.1', port: 0, path: '/mcp', maxSessions: 16, maxBodyBytes: 1024 * 1024 })
    expect(serve.Config({} as never).tools).to.deep.equal(['subagent'])
    expect(serve.Config({} as never).toolFilter).to.equal(undefined)
    expect(serve.Config({} as never).maxDepth).to.equal(undefined)
  })
})
