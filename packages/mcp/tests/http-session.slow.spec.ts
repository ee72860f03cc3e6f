/// <reference types="mocha" />
// An HTTP load's unload (a dispose, a reload by a config edit, a start that failed after initialize) ends its Streamable
// HTTP session on the server (DELETE), waiting for the answer at most `killGrace`. The server is the SDK's own, on 127.0.0.1.
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { codeOf, FAILED, within } from '@cordis-subagents/test-support'
import { client, eventually, setup } from './helpers.js'

type Mode = 'serve' | 'hang-delete' | 'fail-initialized'

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined
}

/** A Streamable HTTP MCP server (one tool, `echo`) that counts its open sessions, the DELETEs it saw and the ones given up. */
async function sessionServer() {
  const state = { mode: 'serve' as Mode, sessions: new Map<string, StreamableHTTPServerTransport>(), deletes: 0, givenUp: 0 }
  const http = createServer((req, res) => void (async () => {
    const body = req.method === 'POST' ? await readJson(req) : undefined
    if (req.method === 'DELETE') {
      state.deletes++
      // Never answered: only the client's giving up (it closes the request) ends it.
      if (state.mode === 'hang-delete') return void res.on('close', () => state.givenUp++)
    }
    if (state.mode === 'fail-initialized' && (body as { method?: string })?.method === 'notifications/initialized') return void res.writeHead(500).end()
    const id = req.headers['mcp-session-id']
    const known = typeof id === 'string' ? state.sessions.get(id) : undefined
    if (known) return known.handleRequest(req, res, body)
    if (id) return void res.writeHead(404).end()
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (sid) => void state.sessions.set(sid, transport),
      onsessionclosed: (sid) => void state.sessions.delete(sid),
    })
    const server = new McpServer({ name: 'sessions', version: '1.0.0' })
    server.registerTool('echo', { description: 'Echoes.', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'echo' }] }))
    await server.connect(transport)
    await transport.handleRequest(req, res, body)
  })())
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`
  const close = () => new Promise<void>((resolve) => {
    http.closeAllConnections()
    http.close(() => resolve())
  })
  return Object.assign(state, { url, close })
}

describe('@cordis-subagents/mcp: an HTTP server\'s session at unload', function () {
  this.timeout(20_000)
  let ctx: Context
  let errors: unknown[]
  let server: Awaited<ReturnType<typeof sessionServer>>

  // A DELETE the server answers is waited for up to 10 s (a bound a loaded machine does not reach); the hanging one gets 300 ms.
  const config = (extra: Record<string, unknown> = {}) => ({ name: 'sess', url: server.url, killGrace: 10_000, ...extra })
  const load = (extra: Record<string, unknown> = {}) => ctx.plugin(client, config(extra))
  const mounted = () => eventually('sess__echo mounted', () => ctx.tools.has('sess__echo'))

  beforeEach(async () => {
    ({ ctx, errors } = await setup())
    server = await sessionServer()
  })

  afterEach(async () => {
    await ctx.stop()
    await ctx.lifecycle.flush()
    await server.close()
  })

  it('a dispose ends the session: the server saw one DELETE and holds no session once ctx.lifecycle.flush() returns', async () => {
    const fork = load()
    await mounted()
    expect(server.sessions.size).to.equal(1)
    fork.dispose()
    await within(ctx.lifecycle.flush(), 15_000, 'ctx.lifecycle.flush()')
    expect(server.deletes).to.equal(1)
    expect(server.sessions.size).to.equal(0)
  })

  it('reloads by a config edit leave the server at most the current load\'s session; none after the unload', async () => {
    const fork = load()
    for (let i = 1; i <= 6; i++) {
      await mounted()
      expect(server.sessions.size, `sessions at load ${i}`).to.equal(1)
      fork.update(config({ callTimeout: 60_000 + i }), true)
      await ctx.lifecycle.flush()
    }
    await mounted()
    expect(server.sessions.size).to.equal(1)
    fork.dispose()
    await ctx.lifecycle.flush()
    expect(server.sessions.size).to.equal(0)
    expect(server.deletes).to.equal(7)
  })

  it('a server that never answers the DELETE holds the unload no longer than killGrace: the client gives the request up', async () => {
    const fork = load({ killGrace: 300 })
    await mounted()
    server.mode = 'hang-delete'
    fork.dispose()
    // The bound only ends a hang: without the client's own bound the server never lets this return.
    await within(ctx.lifecycle.flush(), 5_000, 'ctx.lifecycle.flush() with a DELETE never answered')
    expect(server.deletes).to.equal(1)
    await eventually('the DELETE given up by the client', () => server.givenUp === 1, 2_000)
  })

  it('a start that fails after the session was created (notifications/initialized refused) ends that session', async () => {
    server.mode = 'fail-initialized'
    const fork = load()
    await eventually('the load failed', () => fork.status === FAILED)
    await ctx.lifecycle.flush()
    expect(errors.map(codeOf)).to.deep.equal(['MCP_CONNECT_FAILED'])
    expect(server.deletes).to.equal(1)
    expect(server.sessions.size).to.equal(0)
  })
})
