import { Context } from 'cordis'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as SpawnProvider from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import McpServe from '@cordis-subagents/serve-mcp'
import * as model from './fixtures/model-plugin.js'
import { SERVE_TOKEN } from './serve-app.js'
import { eventually } from './helpers.js'

/** An app serving the spawn delegation tool `subagent` over HTTP (SERVE_TOKEN); resolves once it listens. */
export async function delegatingApp(config: Record<string, unknown>): Promise<Context> {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'test' })
  ctx.plugin(model)
  ctx.plugin(SubagentService)
  ctx.plugin(SpawnProvider)
  ctx.plugin(SubagentTool, { provider: 'spawn' })
  ctx.plugin(McpServe, { transport: 'http', tools: ['subagent'], token: SERVE_TOKEN, ...config })
  await ctx.start()
  await ctx.lifecycle.flush()
  await eventually('serve-mcp listens', () => !!ctx.get('mcpServe')?.url)
  return ctx
}

/** The official SDK client, connected to the app's served MCP endpoint with the token. */
export async function connect(ctx: Context): Promise<Client> {
  const client = new Client({ name: 'spec', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(ctx.mcpServe.url), {
    requestInit: { headers: { Authorization: `Bearer ${SERVE_TOKEN}` } },
  }))
  return client
}
