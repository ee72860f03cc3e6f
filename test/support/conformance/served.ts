// Our served MCP server for the MCP conformance suite's server mode: a cordis app serving the
// `subagent` tool (spawn children of a scripted model) through @cordis-subagents/serve-mcp over
// Streamable HTTP on 127.0.0.1, and in front of it a loopback proxy that adds the bearer token (the
// suite's client sends none). The proxy passes every other header as it came, so the suite's Host and
// Origin checks reach our server's; only its own loopback Host is turned into the server's.
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { ScriptedModel } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as SpawnProvider from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import McpServe from '@cordis-subagents/serve-mcp'
import { eventually } from '@cordis-subagents/test-support'

const TOKEN = 'conformance-token-0123456789'

export interface Served {
  /** The proxy's endpoint, for the suite. */
  url: string
  close(): Promise<void>
}

export async function startServed(): Promise<Served> {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'echo' })
  ctx.plugin({
    name: 'echo-model', inject: ['agents'],
    apply: (c: Context) => { c.agents.registerModel('echo', new ScriptedModel(() => ScriptedModel.text('done'))) },
  })
  ctx.plugin(SubagentService)
  ctx.plugin(SpawnProvider)
  ctx.plugin(SubagentTool, { provider: 'spawn' })
  // The suite opens a session per scenario and closes none: room for all of them.
  ctx.plugin(McpServe, { transport: 'http', tools: ['subagent'], token: TOKEN, maxSessions: 256 })
  await ctx.start()
  await ctx.lifecycle.flush()
  await eventually(() => ctx.get('mcpServe')?.url, 'serve-mcp listens')
  const target = new URL(ctx.mcpServe.url)
  const proxy = await listen(createServer((req, res) => {
    const port = (proxy.address() as AddressInfo).port
    // The proxy's own loopback names become the server's; any other Host or Origin passes as it came.
    const own = (value: string | undefined) => value !== undefined && ['127.0.0.1', 'localhost'].some((h) => value.endsWith(`//${h}:${port}`) || value === `${h}:${port}`)
    const moved = (value: string | undefined) => own(value) ? value!.replace(/:\d+$/, `:${target.port}`) : value
    const headers = { ...req.headers, host: moved(req.headers.host), authorization: `Bearer ${TOKEN}` }
    if (req.headers.origin !== undefined) headers.origin = moved(req.headers.origin)
    const upstream = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    upstream.on('error', () => { if (!res.headersSent) res.writeHead(502); res.end() })
    res.on('close', () => upstream.destroy())
    req.pipe(upstream)
  }))
  const port = (proxy.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}${target.pathname}`,
    async close() {
      proxy.closeAllConnections()
      await new Promise((resolve) => proxy.close(resolve))
      await ctx.stop()
    },
  }
}

function listen(server: Server): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve(server))
  })
}
