/// <reference types="mocha" />
// The MCP server honours the parent's limits like serve-acp: a session whose crossing (SUBAGENT_*, the
// environment a parent host of ours passed down) puts it deeper than the ceiling refuses every call, and
// each call is one tool call of the parent's budget, which the session's calls (each a root run of its own)
// spend one after another; once it has none left, calls are refused.
import { expect } from 'chai'
import type { Context } from 'cordis'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { serveApp, SERVE_TOKEN } from './serve-app.js'

async function connect(ctx: Context) {
  const client = new Client({ name: 'spec', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(ctx.mcpServe.url), {
    requestInit: { headers: { Authorization: `Bearer ${SERVE_TOKEN}` } },
  }))
  return client
}

const text = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as Array<{ text: string }>)[0].text

describe('serve-mcp honours the parent\'s crossing', function () {
  this.timeout(30_000)
  let ctx: Context | undefined
  const saved = { ...process.env }

  async function serveUnder(env: Record<string, string>, config: Record<string, unknown> = {}) {
    Object.assign(process.env, env)
    // ctx.agents reads the crossing once, when it is created.
    try {
      ctx = await serveApp(config)
    } finally {
      for (const name of Object.keys(env)) {
        if (saved[name] === undefined) delete process.env[name]
        else process.env[name] = saved[name]
      }
    }
    return connect(ctx)
  }

  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
  })

  it('a session deeper than the depth ceiling (SUBAGENT_DEPTH over SUBAGENT_MAX_DEPTH, or over maxDepth) refuses every call', async () => {
    for (const [env, config] of [[{ SUBAGENT_DEPTH: '4', SUBAGENT_MAX_DEPTH: '3' }, {}], [{ SUBAGENT_DEPTH: '3' }, { maxDepth: 2 }]] as const) {
      const client = await serveUnder(env, config)
      try {
        const result = await client.callTool({ name: 'whoami', arguments: {} })
        expect(result.isError).to.equal(true)
        expect(text(result)).to.match(/^MCP_SERVE_DEPTH_EXCEEDED: this server runs at depth (4|3), deeper than the ceiling (3|2)/)
      } finally {
        await client.close()
        await ctx?.stop()
        ctx = undefined
      }
    }
  })

  it('at the ceiling a call runs, at the root depth the parent passed', async () => {
    const client = await serveUnder({ SUBAGENT_DEPTH: '3', SUBAGENT_MAX_DEPTH: '3' })
    try {
      expect(text(await client.callTool({ name: 'whoami', arguments: {} }))).to.equal('caller depth 3')
    } finally {
      await client.close()
    }
  })

  it('each call spends a tool call of the parent\'s remaining budget (SUBAGENT_BUDGET); once none is left, calls are refused', async () => {
    const client = await serveUnder({ SUBAGENT_BUDGET: JSON.stringify({ maxToolCalls: 2 }) })
    try {
      expect(text(await client.callTool({ name: 'whoami', arguments: {} }))).to.equal('caller depth 0')
      expect(text(await client.callTool({ name: 'whoami', arguments: {} }))).to.equal('caller depth 0')
      const refused = await client.callTool({ name: 'whoami', arguments: {} })
      expect(refused.isError).to.equal(true)
      expect(text(refused)).to.equal('MCP_SERVE_BUDGET: the delegation tree this server runs in has spent the toolCalls budget (2 tool calls; 2 spent); no more calls are served.')
    } finally {
      await client.close()
    }
  })

  it('an exhausted budget from the config is refused the same way; the parent\'s lower one wins', async () => {
    const client = await serveUnder({ SUBAGENT_BUDGET: JSON.stringify({ maxToolCalls: 0 }) }, { budget: { maxToolCalls: 5 } })
    try {
      const refused = await client.callTool({ name: 'whoami', arguments: {} })
      expect(text(refused)).to.match(/^MCP_SERVE_BUDGET: .*the toolCalls budget \(0 tool calls; 0 spent\)/)
    } finally {
      await client.close()
    }
  })
})
