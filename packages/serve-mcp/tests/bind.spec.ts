/// <reference types="mocha" />
// The bind rule every door of ours shares (shared's bindRefusal): Streamable HTTP off loopback needs
// allowRemote (the bearer token then crosses the network); until issue 41 serve-mcp only warned.
import { expect } from 'chai'
import { Context } from 'cordis'
import { McpServe } from '@cordis-subagents/serve-mcp'

describe('serve-mcp: who may bind off loopback', () => {
  it('HTTP on a non-loopback host without allowRemote fails the load with MCP_SERVE_INVALID_CONFIG', () => {
    expect(() => new McpServe(new Context(), McpServe.Config({ transport: 'http', host: '0.0.0.0' } as never)))
      .to.throw(/serve-mcp: host 0\.0\.0\.0 is not loopback.*allowRemote: true/).with.property('code', 'MCP_SERVE_INVALID_CONFIG')
  })

  it('allowRemote: true allows it; a loopback bind needs nothing', () => {
    for (const config of [{ transport: 'http', host: '0.0.0.0', allowRemote: true }, { transport: 'http', host: '::1' }]) {
      expect(() => new McpServe(new Context(), McpServe.Config(config as never)), JSON.stringify(config)).to.not.throw()
    }
  })
})
