/**
 * One server of the serving scenario (bench/scenarios/serving.ts), in a process of its own so its
 * CPU time is its own: `node --import tsx serving-server.ts <system>` with an IPC channel. It sends
 * `{ url, token }` once it listens, answers `'cpu'` with its `process.cpuUsage()`, and exits on `'stop'`.
 *
 * Systems: `mcp-ours` (serve-mcp over HTTP), `mcp-bare` (the MCP SDK's own Server and Streamable
 * HTTP transport on node:http, a session map, one root agent per session), `a2a-ours` (serve-a2a),
 * `a2a-bare` (the A2A SDK's DefaultRequestHandler, express handlers and in-memory task store, one
 * agent per task), and `mcp-twin`/`a2a-twin`, a second bare server of each (the A/A row). Every system runs the
 * same agents of the same ctx.agents with the same model.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Logger, symbols, type Context } from 'cordis'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import McpServe from '@cordis-subagents/serve-mcp'
import A2aServer from '@cordis-subagents/serve-a2a'
import type { Agent } from '@cordis-subagents/agent'
import { delegationModel, host } from '../lib.js'
import { bareA2aServer } from './a2a-bare.js'

Logger.levels.base = 1

/** What the system serves: MCP's served tool is `subagent` (a child agent's one step); A2A's agent delegates once. */
const SERVED_TOOL = 'subagent'

interface Listening { url: string; token: string; close(): Promise<void> }

/** Limits raised above what the bench sends (rate, sessions, calls in flight); every other default stays. */
const RAISED = 1_000_000

async function mcpOurs(ctx: Context): Promise<Listening> {
  ctx.plugin(McpServe, { transport: 'http', tools: [SERVED_TOOL], maxRequestsPerMinute: RAISED, maxConcurrentCalls: 64 })
  await ctx.lifecycle.flush()
  return { url: ctx.mcpServe.url, token: ctx.mcpServe.token, close: async () => {} }
}

async function mcpBare(ctx: Context): Promise<Listening> {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const view = ctx.tools.view({ allow: [SERVED_TOOL] })
  const session = async () => {
    const server = new Server({ name: 'bare', version: '1.0.0' }, { capabilities: { tools: {} } })
    let root: Agent | undefined
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: view.list().map((spec) => ({ name: spec.name, description: spec.description, inputSchema: spec.parameters as { type: 'object' } })),
    }))
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      root ??= ctx.agents.create({})
      const call = { id: String(extra.requestId), name: request.params.name, input: request.params.arguments ?? {} }
      const result = await view.execute(call, { agent: root, signal: extra.signal, toolCallId: `mcp-${String(extra.requestId)}` })
      return { content: [{ type: 'text' as const, text: result.content }], ...result.isError ? { isError: true } : {} }
    })
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => { sessions.set(id, transport) },
    })
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId)
      void root?.dispose()
    }
    await server.connect(transport)
    return transport
  }
  // The body parsed here and handed to the transport, as the SDK's own examples do (express.json()): left to the
  // transport, it is read again through a web Request (about a tenth of this server's CPU), which ours does not do.
  const http = createServer((req: IncomingMessage, res) => {
    const id = req.headers['mcp-session-id']
    const known = typeof id === 'string' ? sessions.get(id) : undefined
    void Promise.all([known ?? session(), jsonBody(req)]).then(([transport, body]) => transport.handleRequest(req, res, body))
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()))
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    token: 'unused',
    close: () => new Promise<void>((resolve) => {
      http.close(() => resolve())
      http.closeAllConnections()
    }),
  }
}

async function jsonBody(req: IncomingMessage): Promise<unknown> {
  if (req.method !== 'POST') return undefined
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return JSON.parse(Buffer.concat(chunks).toString('utf8'))
}

async function a2aOurs(ctx: Context): Promise<Listening> {
  ctx.plugin(A2aServer, { rateLimit: RAISED, maxConcurrentTasks: 64 })
  await ctx.lifecycle.flush()
  return { url: ctx.a2aServer.url, token: ctx.a2aServer.token!, close: async () => {} }
}

async function a2aBare(ctx: Context): Promise<Listening> {
  // ctx.agents itself, resolved once as serve-a2a does: through cordis' tracing proxy each task's create would cost an
  // Error and a shadow context (≈ 7 % of this server's CPU), which would measure the proxy, not serving.
  const agents = (ctx.agents as unknown as Record<symbol, Context['agents'] | undefined>)[symbols.original] ?? ctx.agents
  const served = await bareA2aServer({
    name: 'bare', streaming: true,
    answer: async (prompt) => {
      const agent = agents.create({})
      try {
        return (await agent.run(prompt)).text
      } finally {
        await agent.dispose()
      }
    },
  })
  return { ...served, token: 'unused' }
}

// The twins are a second bare server of each protocol, for the A/A row: two identical servers, paired like ours and bare.
const systems = { 'mcp-ours': mcpOurs, 'mcp-bare': mcpBare, 'mcp-twin': mcpBare, 'a2a-ours': a2aOurs, 'a2a-bare': a2aBare, 'a2a-twin': a2aBare }
export type ServingSystem = keyof typeof systems

if (process.send && process.argv[2] && process.argv[2] in systems) {
  // An MCP session is one delegation tree for its whole life: its children cap is raised past what the bench sends.
  const h = await host({ model: delegationModel(SERVED_TOOL), width: 64, subagents: { maxChildren: RAISED } })
  const listening = await systems[process.argv[2] as ServingSystem](h.ctx)
  process.on('message', async (message) => {
    if (message === 'cpu') process.send!({ cpu: process.cpuUsage() })
    if (message !== 'stop') return
    await listening.close()
    await h.stop()
    process.disconnect()
  })
  process.send({ url: listening.url, token: listening.token })
}
