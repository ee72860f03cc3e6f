/// <reference types="mocha" />
// The HTTP front's connection bounds, on the real served app over 127.0.0.1: a body that stalls or trickles
// is answered 408 MCP_SERVE_BODY_TIMEOUT within bodyTimeout and its connection closed (it used to hold its
// socket and every chunk it sent for good: requestTimeout was 0 and the body had no deadline); a refused
// request's connection closes though its body never ends; headers that stall are cut; connections past
// maxConnections are closed as they arrive while the admitted ones are served; and an open SSE stream (GET) is
// not cut by any of these deadlines. Each wait is bounded far above the small configured bodyTimeout: the
// bound only ends a wait that would otherwise hang, the assertions are on what happened.
import { connect, type Socket } from 'node:net'
import { type IncomingMessage, request } from 'node:http'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import { within } from '@cordis-subagents/test-support'
import { eventually } from './helpers.js'
import { SERVE_TOKEN, serveApp } from './serve-app.js'

/** The smallest bodyTimeout the schema takes: every deadline of the front (body, headers, idle keep-alive) is at most it. */
const BODY_TIMEOUT = 1000
/** Far above BODY_TIMEOUT (and Node's 1 s connection check): reached only when a deadline never fires. */
const BOUND = 15_000

interface Raw {
  socket: Socket
  /** Everything the server sent so far. */
  received(): string
  /** Settles when the server (or the client) closed the connection. */
  closed: Promise<void>
  isClosed(): boolean
}

const sockets = new Set<Socket>()

function open(ctx: Context): Promise<Raw> {
  const url = new URL(ctx.mcpServe.url)
  return new Promise((resolve, reject) => {
    let text = ''
    let isClosed = false
    const socket = connect(Number(url.port), '127.0.0.1')
    sockets.add(socket)
    const closed = new Promise<void>((done) => socket.once('close', () => {
      isClosed = true
      done()
    }))
    socket.on('data', (chunk: Buffer) => { text += chunk.toString('utf8') })
    socket.on('error', () => {}) // a connection the server closes may reset a write in flight
    socket.once('connect', () => resolve({ socket, received: () => text, closed, isClosed: () => isClosed }))
    socket.once('error', reject)
  })
}

/** The request line and headers of a POST to the endpoint (the token unless `token` is false), ready for a body. */
function head(ctx: Context, headers: Record<string, string | number>, token = true): string {
  const url = new URL(ctx.mcpServe.url)
  const all: Record<string, string | number> = {
    host: url.host, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
    ...token ? { authorization: `Bearer ${SERVE_TOKEN}` } : {}, ...headers,
  }
  return `POST ${url.pathname} HTTP/1.1\r\n${Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`
}

function post(ctx: Context, body: unknown): string {
  const text = JSON.stringify(body)
  return head(ctx, { 'content-length': Buffer.byteLength(text) }) + text
}

const initialize = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bounds', version: '1.0.0' } },
}

/** The JSON-RPC error of a raw answer (its body is the one JSON object in it, chunked or not). */
function errorOf(answer: string): { code: number; message: string; data?: { code?: string } } {
  return JSON.parse(answer.slice(answer.indexOf('{'), answer.lastIndexOf('}') + 1)).error
}

describe('serve-mcp over HTTP: connection bounds', function () {
  this.timeout(60_000)
  let ctx: Context | undefined

  afterEach(async () => {
    for (const socket of sockets) socket.destroy()
    sockets.clear()
    await ctx?.stop()
    ctx = undefined
  })

  it('a body that stops short of its Content-Length is answered 408 MCP_SERVE_BODY_TIMEOUT and its connection closed', async () => {
    ctx = await serveApp({ bodyTimeout: BODY_TIMEOUT })
    const stalled = await open(ctx)
    stalled.socket.write(head(ctx, { 'content-length': 1000 }) + '{"jsonrpc":"2.0",')
    await within(stalled.closed, BOUND, 'the stalled body\'s connection closes')
    const answer = stalled.received()
    expect(answer).to.match(/^HTTP\/1\.1 408 /)
    expect(answer.toLowerCase()).to.include('connection: close')
    const error = errorOf(answer)
    expect(error.data).to.deep.equal({ code: 'MCP_SERVE_BODY_TIMEOUT' })
    expect(error.message).to.match(/^MCP_SERVE_BODY_TIMEOUT: the request body did not arrive in full within 1000 ms \(bodyTimeout\)/)
    // The server serves on: a whole request on a new connection is answered.
    const next = await open(ctx)
    next.socket.write(post(ctx, initialize))
    await eventually('the next request is answered', () => next.received().startsWith('HTTP/1.1 200 '), BOUND)
    expect(ctx.mcpServe.sessions).to.equal(1)
  })

  it('a body that trickles (a byte at a time, more often than bodyTimeout) is cut at bodyTimeout all the same', async () => {
    ctx = await serveApp({ bodyTimeout: BODY_TIMEOUT })
    const trickling = await open(ctx)
    trickling.socket.write(head(ctx, { 'transfer-encoding': 'chunked' }) + '1\r\n{\r\n')
    const drip = setInterval(() => trickling.socket.write('1\r\n \r\n'), BODY_TIMEOUT / 5)
    try {
      await within(trickling.closed, BOUND, 'the trickling body\'s connection closes')
    } finally {
      clearInterval(drip)
    }
    expect(trickling.received()).to.match(/^HTTP\/1\.1 408 /)
    expect(errorOf(trickling.received()).data).to.deep.equal({ code: 'MCP_SERVE_BODY_TIMEOUT' })
    expect(ctx.mcpServe.sessions).to.equal(0)
  })

  it('a refused request (no token) whose body trickles on gets its 401 and its connection closed', async () => {
    ctx = await serveApp({ bodyTimeout: BODY_TIMEOUT })
    const refused = await open(ctx)
    refused.socket.write(head(ctx, { 'transfer-encoding': 'chunked' }, false) + '1\r\n{\r\n')
    // Bytes keep coming, so no idle timer of the socket would ever fire.
    const drip = setInterval(() => refused.socket.write('1\r\n \r\n'), BODY_TIMEOUT / 5)
    try {
      await within(refused.closed, BOUND, 'the refused request\'s connection closes')
    } finally {
      clearInterval(drip)
    }
    expect(refused.received()).to.match(/^HTTP\/1\.1 401 /)
    expect(errorOf(refused.received()).message).to.match(/^missing token/)
  })

  it('headers that stall, and a connection that sends nothing, are closed (headers get the lesser of 30 s and bodyTimeout)', async () => {
    ctx = await serveApp({ bodyTimeout: BODY_TIMEOUT })
    const silent = await open(ctx)
    const partial = await open(ctx)
    partial.socket.write(`POST ${new URL(ctx.mcpServe.url).pathname} HTTP/1.1\r\nhost: 127.0.0.1\r\n`)
    await within(Promise.all([silent.closed, partial.closed]), BOUND, 'both connections close')
    expect(silent.received()).to.not.match(/^HTTP\/1\.1 200/)
    expect(partial.received()).to.not.match(/^HTTP\/1\.1 200/)
  })

  it('past maxConnections a new connection is closed as it arrives, unanswered; the admitted ones are served, and a freed slot serves again', async () => {
    ctx = await serveApp({ maxConnections: 2 })
    const idle = await open(ctx)
    const admitted = await open(ctx)
    // Accepted in arrival order: the third is past the cap.
    const extra = await open(ctx)
    extra.socket.write(post(ctx, initialize))
    await within(extra.closed, BOUND, 'the connection past maxConnections closes')
    expect(extra.received()).to.equal('')
    admitted.socket.write(post(ctx, initialize))
    await eventually('the admitted connection is answered', () => admitted.received().startsWith('HTTP/1.1 200 '), BOUND)
    expect(ctx.mcpServe.sessions).to.equal(1)
    idle.socket.destroy()
    // Once the server saw the idle one go, a new connection is served (each try before that is closed unanswered).
    await eventually('a new connection is served once a slot is free', async () => {
      const next = await open(ctx!)
      next.socket.write(post(ctx!, initialize))
      await eventually('an answer or a close', () => next.received().includes('\r\n\r\n') || next.isClosed(), BOUND)
      return next.received().startsWith('HTTP/1.1 200 ')
    }, BOUND)
    expect(ctx.mcpServe.sessions).to.equal(2)
  })

  it('an open SSE stream (GET) outlives every deadline (body, headers, idle keep-alive) and still delivers', async () => {
    ctx = await serveApp({ bodyTimeout: BODY_TIMEOUT })
    const url = new URL(ctx.mcpServe.url)
    const send = (method: string, headers: Record<string, string>, body?: unknown) => new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(url, {
        method, agent: false,
        headers: {
          host: url.host, authorization: `Bearer ${SERVE_TOKEN}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json',
          'mcp-protocol-version': '2025-06-18', ...headers,
        },
      }, resolve)
      req.on('error', reject)
      req.end(body === undefined ? undefined : JSON.stringify(body))
    })
    const opened = await send('POST', {}, initialize)
    const session = String(opened.headers['mcp-session-id'])
    opened.destroy()
    ;(await send('POST', { 'mcp-session-id': session }, { jsonrpc: '2.0', method: 'notifications/initialized' })).resume()
    const stream = await send('GET', { 'mcp-session-id': session, accept: 'text/event-stream' })
    expect(stream.statusCode).to.equal(200)
    expect(stream.headers['content-type']).to.match(/^text\/event-stream/)
    let events = ''
    let cut = false
    stream.on('data', (chunk: Buffer) => { events += chunk.toString('utf8') })
    stream.on('close', () => { cut = true })
    try {
      // Past bodyTimeout, the headers' deadline and the keep-alive one (each at most BODY_TIMEOUT), and Node's 1 s check.
      await new Promise((resolve) => setTimeout(resolve, 3 * BODY_TIMEOUT + 1000))
      expect(cut, 'the SSE stream was cut').to.equal(false)
      // A tool served now changes the list: the session tells the client on its standalone stream.
      ctx.tools.register({ name: 'absent', description: 'Now present.', input: z.object({}), execute: () => ({ content: 'here' }) })
      await eventually('the stream delivers tools/list_changed', () => events.includes('notifications/tools/list_changed'), BOUND)
      expect(cut).to.equal(false)
    } finally {
      stream.destroy()
    }
  })
})
