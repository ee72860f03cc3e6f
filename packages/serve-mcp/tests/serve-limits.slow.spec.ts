/// <reference types="mocha" />
// The HTTP front's caps, on a small app: live sessions (503 past maxSessions), the request rate
// (429), unknown sessions (404), a served tool that is not registered (not listed), and stop
// closing every session and the listener.
import { request } from 'node:http'
import { expect } from 'chai'
import { Context } from 'cordis'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import McpServe from '@cordis-subagents/serve-mcp'
import { freePort, unloadedWhileStarting, within } from '@cordis-subagents/test-support'
import { SERVE_TOKEN, serveApp as app } from './serve-app.js'

function connect(ctx: Context) {
  const client = new Client({ name: 'spec', version: '1.0.0' })
  return client.connect(new StreamableHTTPClientTransport(new URL(ctx.mcpServe.url), {
    requestInit: { headers: { Authorization: 'Bearer spec-token-0123456789' } },
  })).then(() => client)
}

function post(ctx: Context, headers: Record<string, string> = {}) {
  return new Promise<number>((resolve, reject) => {
    const url = new URL(ctx.mcpServe.url)
    const req = request({
      host: '127.0.0.1', port: url.port, path: url.pathname, method: 'POST',
      headers: { host: url.host, authorization: 'Bearer spec-token-0123456789', 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    }, (res) => { res.resume(); resolve(res.statusCode!) })
    req.on('error', reject)
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }))
  })
}

describe('serve-mcp over HTTP: caps', function () {
  this.timeout(30_000)
  let ctx: Context | undefined

  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
  })

  it('a configured token is used; a served name that is not registered is not listed; the caller is a root agent', async () => {
    ctx = await app({})
    expect(ctx.mcpServe.token).to.equal('spec-token-0123456789')
    const client = await connect(ctx)
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).to.deep.equal(['whoami'])
      expect((await client.callTool({ name: 'whoami', arguments: {} })).content).to.deep.equal([{ type: 'text', text: 'caller depth 0' }])
    } finally {
      await client.close()
    }
  })

  it('past maxSessions a new session is refused with 503 while the others are recent; unknown session ids get 404', async () => {
    ctx = await app({ maxSessions: 1 })
    const first = await connect(ctx)
    try {
      expect(ctx.mcpServe.sessions).to.equal(1)
      await connect(ctx).then(() => { throw new Error('expected 503') }, (error: Error) => expect(error.message).to.match(/too many sessions/))
      expect(await post(ctx, { 'mcp-session-id': 'no-such-session' })).to.equal(404)
    } finally {
      await first.close()
    }
  })

  it('a call whose root agent cannot be made fails alone: the session still serves its next call (maxConcurrentCalls 1)', async () => {
    ctx = await app({ maxConcurrentCalls: 1 })
    const runtime = withoutCallerTracing(ctx.agents)
    const createServed = runtime.createServed
    let broke = false
    runtime.createServed = (...args) => {
      if (!broke) {
        broke = true
        throw new Error('the runtime broke')
      }
      return createServed.apply(runtime, args)
    }
    const client = await connect(ctx)
    try {
      const failed = await client.callTool({ name: 'whoami', arguments: {} })
      expect(failed.isError).to.equal(true)
      expect(failed.content).to.deep.equal([{ type: 'text', text: 'The call failed: the runtime broke' }])
      expect((await client.callTool({ name: 'whoami', arguments: {} })).content).to.deep.equal([{ type: 'text', text: 'caller depth 0' }])
    } finally {
      await client.close()
    }
  })

  it('unloaded while it starts (at any turn of the loop): the load settles, nothing listens, and a load that stays takes the port', async () => {
    ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, { model: 'test' })
    await ctx.start()
    const port = await freePort()
    const load = () => ctx!.plugin(McpServe, { transport: 'http', tools: ['whoami'], token: SERVE_TOKEN, port })
    // After each unload the app settles (its flush resolves), then the port is free.
    const settle = async () => {
      await within(ctx!.lifecycle.flush(), 5000, 'the app settles after an unload')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(await unloadedWhileStarting(load, port, settle)).to.deep.equal({ left: [], stays: true })
  })

  it('past maxRequestsPerMinute requests get 429', async () => {
    ctx = await app({ maxRequestsPerMinute: 2 })
    const codes = [await post(ctx), await post(ctx), await post(ctx)]
    expect(codes).to.deep.equal([400, 400, 429])
  })

  it('stop closes the sessions and the listener', async () => {
    ctx = await app({})
    const url = ctx.mcpServe.url
    const client = await connect(ctx)
    await ctx.stop()
    ctx = undefined
    await client.close()
    const refused = await new Promise<string>((resolve) => {
      const req = request(url, { method: 'POST' }, () => resolve('answered'))
      req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
      req.end()
    })
    expect(refused).to.equal('ECONNREFUSED')
  })
})

