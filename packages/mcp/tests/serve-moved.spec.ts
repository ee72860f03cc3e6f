/// <reference types="mocha" />
// The MCP server moved to @cordis-subagents/serve-mcp; for one release this package's ./serve entry re-exports it.
import { expect } from 'chai'

describe('@cordis-subagents/mcp/serve (moved to @cordis-subagents/serve-mcp)', () => {
  it('is the same plugin and config as @cordis-subagents/serve-mcp', async () => {
    const [old, moved] = await Promise.all([import('@cordis-subagents/mcp/serve'), import('@cordis-subagents/serve-mcp')])
    expect(old.default).to.equal(moved.default)
    expect(old.McpServe).to.equal(moved.McpServe)
    expect(old.Config).to.equal(moved.Config)
  })
})
