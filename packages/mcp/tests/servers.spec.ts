/// <reference types="mocha" />
// `ctx.mcp` keeps one entry per server name: a second `add` of a name another load's entry holds is refused, never a
// replacement (before, it replaced the first entry, and its unload then deleted the name: the first server was lost).
import { expect } from 'chai'
import { Context } from 'cordis'
import McpServers, { type McpServerEntry } from '@cordis-subagents/mcp/servers'

const entry = (command: string): McpServerEntry => ({
  name: 'files', launch: { name: 'files', command, args: [], env: [] }, tools: () => ['files__echo'], filtered: false,
})

describe('@cordis-subagents/mcp/servers: ctx.mcp', () => {
  it('refuses a second entry of one name (MCP_DUPLICATE_NAME) and keeps the first through the refused load\'s unload', async () => {
    const ctx = new Context()
    const errors: unknown[] = []
    ctx.on('internal/error', (error) => { errors.push(error) })
    ctx.plugin(McpServers)
    await ctx.start()
    const first = entry('first')
    const a = ctx.plugin((inner: Context) => { inner.mcp.add(first) })
    const b = ctx.plugin((inner: Context) => { inner.mcp.add(entry('second')) })
    await ctx.lifecycle.flush()
    expect(errors.map((error) => (error as { code?: unknown }).code)).to.deep.equal(['MCP_DUPLICATE_NAME'])
    expect((errors[0] as Error).message).to.match(/own name/)
    expect(ctx.mcp.list()).to.deep.equal([first])
    b.dispose()
    expect(ctx.mcp.list()).to.deep.equal([first])
    a.dispose()
    expect(ctx.mcp.list()).to.deep.equal([])
    await ctx.stop()
  })
})
