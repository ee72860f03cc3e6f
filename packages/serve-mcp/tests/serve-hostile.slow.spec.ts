/// <reference types="mocha" />
// Issue 39 against the real HTTP front: a burst of concurrent initialize requests cannot open more
// than maxSessions sessions (item 11), and a missing or wrong token gets a plain 401 with no OAuth
// challenge, while every OAuth discovery path is 404 (item 16).
import { request } from 'node:http'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { SERVE_TOKEN, serveApp } from './serve-app.js'

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

interface Sent {
  method?: string
  path?: string
  headers?: Record<string, string>
  body?: unknown
}

function send(ctx: Context, options: Sent): Promise<Answer> {
  const url = new URL(ctx.mcpServe.url)
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port: url.port, path: options.path ?? url.pathname, method: options.method ?? 'POST',
      headers: { host: url.host, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...options.headers },
    }, (res) => {
      const chunks: Buffer[] = []
      // An initialize answered as an SSE stream stays open: the first chunk carries the result.
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk)
        if (res.headers['content-type']?.startsWith('text/event-stream')) res.destroy()
      })
      res.on('close', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
    })
    req.on('error', reject)
    req.end(options.body === undefined ? undefined : JSON.stringify(options.body))
  })
}

const initialize = (id: number) => ({
  jsonrpc: '2.0', id, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: `burst-${id}`, version: '1.0.0' } },
})

describe('serve-mcp over HTTP: hostile inputs (issue 39)', function () {
  this.timeout(30_000)
  let ctx: Context | undefined

  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
  })

  it('item 11: 60 concurrent initialize requests open at most maxSessions sessions; the rest get 503', async () => {
    ctx = await serveApp({ maxSessions: 4, maxRequestsPerMinute: 10_000 })
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => send(ctx!, {
      headers: { authorization: `Bearer ${SERVE_TOKEN}` }, body: initialize(i + 1),
    })))
    const opened = answers.filter((answer) => answer.status === 200)
    expect(opened).to.have.length(4)
    expect(answers.filter((answer) => answer.status === 503)).to.have.length(56)
    expect(new Set(opened.map((answer) => answer.headers['mcp-session-id'])).size).to.equal(4)
    expect(ctx.mcpServe.sessions).to.equal(4)
  })

  it('item 16: a missing or wrong token gets 401 without a WWW-Authenticate challenge, and a message saying what to send', async () => {
    ctx = await serveApp({})
    const missing = await send(ctx, { body: initialize(1) })
    expect(missing.status).to.equal(401)
    expect(missing.headers).to.not.have.property('www-authenticate')
    expect(JSON.parse(missing.body).error.message).to.match(/^missing token: send Authorization: Bearer <token>/).and.include('does not do OAuth')
    const wrong = await send(ctx, { headers: { authorization: 'Bearer not-the-token' }, body: initialize(2) })
    expect(wrong.status).to.equal(401)
    expect(wrong.headers).to.not.have.property('www-authenticate')
    expect(JSON.parse(wrong.body).error.message).to.match(/^wrong token: /)
    expect(wrong.body).to.not.include(SERVE_TOKEN)
  })

  it('item 16: the OAuth discovery and flow paths are 404 with or without a token, never a challenge', async () => {
    ctx = await serveApp({})
    const paths = [
      '/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-authorization-server', '/.well-known/oauth-authorization-server/mcp', '/.well-known/openid-configuration',
      '/register', '/authorize', '/token',
    ]
    const tokens: Record<string, string>[] = [{}, { authorization: 'Bearer wrong' }, { authorization: `Bearer ${SERVE_TOKEN}` }]
    for (const path of paths) {
      for (const headers of tokens) {
        const answer = await send(ctx, { method: 'GET', path, headers })
        expect(answer.status, `${path} ${JSON.stringify(headers)}`).to.equal(404)
        expect(answer.headers).to.not.have.property('www-authenticate')
      }
    }
  })

  it('item 16: the SDK client with a wrong token fails with the server\'s message (no OAuth attempt)', async () => {
    ctx = await serveApp({})
    const client = new Client({ name: 'spec', version: '1.0.0' })
    const transport = new StreamableHTTPClientTransport(new URL(ctx.mcpServe.url), { requestInit: { headers: { Authorization: 'Bearer wrong' } } })
    const error = await client.connect(transport).then(() => undefined, (e: Error & { code?: number }) => e)
    await client.close()
    expect(error?.code).to.equal(401)
    expect(error?.message).to.include('wrong token: the Authorization header does not carry this server\'s bearer token')
    expect(ctx.mcpServe.sessions).to.equal(0)
  })
})
