/// <reference types="mocha" />
// A cancelled call over HTTP lets go of its request: the SDK's transport keeps a request's id mapped to its
// stream until the request is answered, and its protocol never answers a cancelled one, so each cancelled call
// stayed mapped (with its client-chosen id) for the session's life. The front answers it now, and refuses a
// string id over MAX_REQUEST_ID_CHARS before the SDK sees it.
import { type ClientRequest, type IncomingMessage, request } from 'node:http'
import { expect } from 'chai'
import { Context } from 'cordis'
import { z } from 'zod'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { ScriptedModel } from '@cordis-subagents/agent'
import McpServe from '@cordis-subagents/serve-mcp'
import { eventually } from './helpers.js'

const TOKEN = 'spec-token-0123456789'
const CALLS = 30

interface SdkTransport {
  _requestToStreamMapping: Map<unknown, string>
  _streamMapping: Map<string, unknown>
  _requestResponseMap: Map<unknown, unknown>
}

/** What the SDK's transports of every open session hold now: requests mapped to streams, request streams, stored responses. */
function held(ctx: Context) {
  type Front = { sessions: Map<string, { transport: { _webStandardTransport: SdkTransport } }> }
  const front = (ctx.mcpServe as unknown as { http: Front }).http
  let requests = 0, streams = 0, responses = 0
  for (const { transport } of front.sessions.values()) {
    const sdk = transport._webStandardTransport
    // A renamed field would read as 0 and pass for no growth: fail instead.
    if (!(sdk._requestToStreamMapping instanceof Map) || !(sdk._streamMapping instanceof Map)) throw new Error('the SDK transport\'s maps moved')
    requests += sdk._requestToStreamMapping.size
    // The standalone GET stream the SDK client opens on its own is no request's.
    streams += [...sdk._streamMapping.keys()].filter((id) => id !== '_GET_stream').length
    responses += sdk._requestResponseMap.size
  }
  return { requests, streams, responses }
}

describe('serve-mcp over HTTP: cancelled calls and request ids', function () {
  this.timeout(60_000)
  let ctx: Context | undefined
  let client: Client | undefined
  const open: ClientRequest[] = []
  let started = 0
  let running = 0

  async function serve(): Promise<Context> {
    const app = new Context()
    app.plugin(ToolRegistry)
    app.plugin(AgentRuntime, { model: 'test' })
    app.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('test', new ScriptedModel([])) } })
    app.plugin({
      name: 'wait', inject: ['tools'],
      apply: (c: Context) => {
        c.tools.register({
          name: 'wait', description: 'Waits until cancelled.', input: z.object({}),
          execute: (_input, exec) => new Promise((resolve) => {
            started++
            running++
            exec.signal.addEventListener('abort', () => {
              running--
              resolve({ content: 'cancelled' })
            }, { once: true })
          }),
        })
        c.tools.register({ name: 'echo', description: 'Answers.', input: z.object({}), execute: () => ({ content: 'here' }) })
      },
    })
    app.plugin(McpServe, { transport: 'http', tools: ['wait', 'echo'], token: TOKEN, maxRequestsPerMinute: 100_000 })
    await app.start()
    await app.lifecycle.flush()
    await eventually('the server listens', () => !!app.get('mcpServe')?.url)
    return app
  }

  function post(body: unknown, session?: string): Promise<{ res: IncomingMessage; text: () => Promise<string> }> {
    const url = new URL(ctx!.mcpServe.url)
    return new Promise((resolve, reject) => {
      const req = request(url, {
        method: 'POST', agent: false,
        headers: {
          host: url.host, authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json',
          accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', ...session ? { 'mcp-session-id': session } : {},
        },
      }, (res) => resolve({
        res,
        text: () => new Promise((done) => {
          let text = ''
          res.on('data', (chunk) => { text += chunk })
          res.on('end', () => done(text))
        }),
      }))
      open.push(req)
      req.on('error', reject)
      req.end(JSON.stringify(body))
    })
  }

  async function rawSession(): Promise<string> {
    const init = await post({
      jsonrpc: '2.0', id: 0, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    })
    const session = String(init.res.headers['mcp-session-id'])
    init.res.destroy()
    await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session)).text()
    return session
  }

  beforeEach(() => {
    started = 0
    running = 0
  })

  afterEach(async () => {
    for (const req of open.splice(0)) req.destroy()
    await client?.close()
    client = undefined
    await ctx?.stop()
    ctx = undefined
  })

  it(`${CALLS} calls the SDK client cancels leave no request mapped and no stream open; the client calls on`, async () => {
    ctx = await serve()
    client = new Client({ name: 'spec', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(ctx.mcpServe.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }))
    const before = held(ctx)
    for (let i = 1; i <= CALLS; i++) {
      const controller = new AbortController()
      const call = client.callTool({ name: 'wait', arguments: {} }, undefined, { signal: controller.signal })
      await eventually(`call ${i} reached the tool`, () => started === i)
      controller.abort(new Error('stop'))
      await call.then(() => { throw new Error('the cancelled call resolved') }, () => {})
    }
    await eventually('every cancelled call ended', () => running === 0)
    await eventually(`the transport holds what it held before the ${CALLS} calls`, () => {
      const now = held(ctx!)
      return now.requests === before.requests && now.streams === before.streams && now.responses === 0
    })
    const answer = await client.callTool({ name: 'echo', arguments: {} })
    expect(answer.content).to.deep.equal([{ type: 'text', text: 'here' }])
  })

  it(`${CALLS} calls cancelled by a client that then drops the stream (ids of ${256} characters) leave nothing mapped`, async () => {
    ctx = await serve()
    const session = await rawSession()
    for (let i = 1; i <= CALLS; i++) {
      const id = `${i}-`.padEnd(256, 'x')
      const call = await post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'wait', arguments: {} } }, session)
      expect(call.res.statusCode).to.equal(200)
      await eventually(`call ${i} reached the tool`, () => started === i)
      await (await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'stop' } }, session)).text()
      call.res.destroy()
    }
    await eventually('every cancelled call ended', () => running === 0)
    await eventually('the transport holds no request', () => held(ctx!).requests === 0 && held(ctx!).streams === 0)
  })

  it('a string id over 256 characters is refused (-32600 MCP_SERVE_ID_TOO_LONG) before the SDK sees it; numbers and 256 are fine', async () => {
    ctx = await serve()
    const initialize = { method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }
    const refusedInit = await post({ jsonrpc: '2.0', id: 'i'.repeat(257), ...initialize })
    expect(refusedInit.res.statusCode).to.equal(400)
    expect(JSON.parse(await refusedInit.text()).error.data).to.deep.equal({ code: 'MCP_SERVE_ID_TOO_LONG' })
    expect(ctx.mcpServe.sessions).to.equal(0)

    const session = await rawSession()
    const call = (id: string | number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: {} } })
    for (const body of [call('x'.repeat(100_000)), [call(1), call('y'.repeat(257))]]) {
      const refused = await post(body, session)
      expect(refused.res.statusCode).to.equal(400)
      const answer = JSON.parse(await refused.text())
      expect(answer.id).to.equal(null)
      expect(answer.error.code).to.equal(-32600)
      expect(answer.error.message).to.match(/^MCP_SERVE_ID_TOO_LONG: a JSON-RPC id is \d+ characters long; this server accepts string ids of at most 256 characters/)
      expect(answer.error.data).to.deep.equal({ code: 'MCP_SERVE_ID_TOO_LONG' })
    }
    expect(held(ctx).requests).to.equal(0)
    for (const id of [Number.MAX_SAFE_INTEGER, 'z'.repeat(256)]) {
      const served = await post(call(id), session)
      expect(served.res.statusCode).to.equal(200)
      const text = await served.text()
      expect(text).to.include('"here"').and.include(JSON.stringify(id))
    }
  })
})
