/// <reference types="mocha" />
// The HTTP front's idle measures and its cancel reserve count on the monotonic clock, over a real server: a step of
// the wall clock (an NTP correction, a VM resumed, `date -s`) does not make a session just used look idle (evicted
// for a new one), does not keep an idle session past sessionIdleTimeout, and does not refill a spent cancel reserve.
// (The request limit's minute: http-rate-clock.spec.ts, in process.)
import { request } from 'node:http'
import { expect } from 'chai'
import { Context } from 'cordis'
import { eventually, withSteppedClock } from '@cordis-subagents/test-support'
import { SERVE_TOKEN, serveApp } from './serve-app.js'

describe('serve-mcp over HTTP: sessions and cancels across wall-clock steps', function () {
  this.timeout(30_000)
  let ctx: Context | undefined

  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
  })

  /** POSTs `body` (in `session`, if given); resolves with the status and the session id answered. */
  function post(body: unknown, session?: string): Promise<{ status: number; session?: string }> {
    return new Promise((resolve, reject) => {
      const url = new URL(ctx!.mcpServe.url)
      const req = request({
        host: '127.0.0.1', port: url.port, path: url.pathname, method: 'POST',
        headers: {
          host: url.host, authorization: `Bearer ${SERVE_TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
          ...session ? { 'mcp-session-id': session } : {},
        },
      }, (res) => {
        res.resume()
        const id = res.headers['mcp-session-id']
        res.once('end', () => resolve({ status: res.statusCode!, ...typeof id === 'string' ? { session: id } : {} }))
      })
      req.on('error', reject)
      req.end(JSON.stringify(body))
    })
  }

  /**
   * A session opened by a bare initialize request, and nothing more: no client sends anything in it afterwards
   * (a client's own requests, its event stream's GET among them, would count as use).
   */
  const initialize = () => post({
    jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'spec', version: '1.0.0' } },
  })

  async function open(): Promise<string> {
    const { status, session } = await initialize()
    expect(status, 'initialize').to.equal(200)
    return session!
  }

  it('a session just used is not evicted for a new one when the wall clock steps forward 1 h (maxSessions 1)', async () => {
    ctx = await serveApp({ maxSessions: 1 })
    await open()
    await withSteppedClock(async (step) => {
      step(3_600_000)
      expect((await initialize()).status, 'a second session: the first one is not idle').to.equal(503)
    })
    expect(ctx.mcpServe.sessions).to.equal(1)
  })

  it('an idle session is closed after sessionIdleTimeout though the wall clock stepped back 1 h', async () => {
    ctx = await serveApp({ sessionIdleTimeout: 1_000 })
    await open()
    expect(ctx.mcpServe.sessions).to.equal(1)
    await withSteppedClock(async (step) => {
      step(-3_600_000)
      await eventually(() => ctx!.mcpServe.sessions === 0, 'the idle session is closed')
    })
  })

  it('a spent cancel reserve is not refilled when the wall clock steps forward 1 h', async () => {
    ctx = await serveApp({ maxRequestsPerMinute: 5 })
    const session = await open()
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' }
    const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99, reason: 'spec' } }
    await eventually(async () => await (await post(list, session)).status === 429, 'the request limit is spent', { timeout: 10_000, every: 1 })
    let admitted = 0
    while ((await post(cancel, session)).status !== 429) if (++admitted > 100) throw new Error('the cancel reserve never ran out')
    expect(admitted, 'the reserve: 60 cancels a minute').to.equal(60)
    await withSteppedClock(async (step) => {
      step(3_600_000)
      expect((await post(cancel, session)).status, 'a cancel past the spent reserve').to.equal(429)
    })
  })
})
