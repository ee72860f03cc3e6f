// A remote that misbehaves at the HTTP level (a raw node:http server on 127.0.0.1): a malformed or
// wrongly typed card, a 500, a body that never ends, answers too big, a card that points elsewhere.
// Every case ends with a clear error within its timeout; nothing hangs.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { Context } from 'cordis'
import SubagentService from '@cordis-subagents/subagents-service'
import * as a2a from '../src/index.js'
import { startScriptedServer } from './fixtures/scripted-server.js'
import { provider, request, within } from './helpers.js'

type Handler = (req: IncomingMessage, res: ServerResponse, base: string) => void

async function rawServer(handler: Handler): Promise<{ base: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => handler(req, res, base))
  server.listen(0, '127.0.0.1')
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    base,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    }),
  }
}

function card(base: string, extra: Record<string, unknown> = {}) {
  return {
    name: 'raw', description: '', version: '1', capabilities: { streaming: true },
    supportedInterfaces: [{ url: `${base}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [], ...extra,
  }
}

async function loadError(url: string, options = {}): Promise<a2a.A2aError> {
  const error = await within(provider(url, { cardTimeout: 1_000, requestTimeout: 1_000, ...options }).then(() => undefined, (e) => e), 10_000, 'createA2aProvider')
  expect(error, 'the load must fail').to.be.instanceOf(Error)
  return error
}

describe('provider-a2a against a misbehaving remote', function () {
  this.timeout(20_000)
  const closers: Array<() => Promise<void>> = []
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()))
  })
  async function serve(handler: Handler) {
    const server = await rawServer(handler)
    closers.push(server.close)
    return server.base
  }

  const cases: Array<[string, Handler, string, RegExp]> = [
    ['a card that is not JSON', (_q, res) => { res.setHeader('content-type', 'application/json'); res.end('{ not json') }, 'A2A_CARD_INVALID', /agent card at http:\/\/127\.0\.0\.1:\d+\/\.well-known\/agent-card\.json is not valid JSON/],
    ['a card served as text/html', (_q, res) => { res.setHeader('content-type', 'text/html'); res.end('<html>hi</html>') }, 'A2A_CARD_INVALID', /has content type "text\/html"; an agent card is served as application\/json/],
    ['a JSON array', (_q, res) => { res.setHeader('content-type', 'application/json'); res.end('[]') }, 'A2A_CARD_INVALID', /is not a JSON object/],
    ['a card without a name', (_q, res, base) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(card(base, { name: '' }))) }, 'A2A_CARD_INVALID', /has no name/],
    ['a card with neither supportedInterfaces nor a url', (_q, res) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ name: 'empty', protocolVersion: '0.3.0' })) }, 'A2A_CARD_INVALID', /lists no supportedInterfaces \(A2A 1\.0\) and no top-level url \(A2A 0\.2\/0\.3\): it offers nothing to talk to/],
    ['an A2A 0.3 card on another origin', (_q, res) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ name: 'old', url: 'http://127.0.0.2:9/rpc', protocolVersion: '0.3.0' })) }, 'A2A_CARD_INVALID', /offers no interface this provider can use \(A2A 0\.3 JSONRPC http:\/\/127\.0\.0\.2:9\/rpc: it is on another origin than the card/],
    ['an A2A 0.3 card over plain http to a remote host', (_q, res) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ name: 'old', url: 'http://example.com/rpc', protocolVersion: '0.3.0' })) }, 'A2A_CARD_INVALID', /A2A 0\.3 JSONRPC http:\/\/example\.com\/rpc: plain http to example\.com, which is not a loopback host/],
    ['a card whose every interface is unusable, in both versions', (_q, res, base) => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(card(base, {
        supportedInterfaces: [{ url: `${base}/grpc`, protocolBinding: 'GRPC', protocolVersion: '1.0' }, { url: `${base}/v2`, protocolBinding: 'JSONRPC', protocolVersion: '2.0' }],
        url: `${base}/rest`, preferredTransport: 'HTTP+JSON', protocolVersion: '0.3.0', additionalInterfaces: [{ url: 'ftp://x/y', transport: 'JSONRPC' }],
      })))
    }, 'A2A_CARD_INVALID', /offers no interface this provider can use \(GRPC http:\/\/127\.0\.0\.1:\d+\/grpc: binding "GRPC" is not one of JSONRPC, HTTP\+JSON; JSONRPC http:\/\/127\.0\.0\.1:\d+\/v2: protocol version "2\.0" is not 1\.x, 0\.3 or 0\.2; A2A 0\.3 HTTP\+JSON http:\/\/127\.0\.0\.1:\d+\/rest: binding "HTTP\+JSON" is not used over A2A 0\.2\/0\.3 \(only JSONRPC\); A2A 0\.3 JSONRPC ftp:\/\/x\/y: ftp: is not http: or https:\)/],
    ['only a gRPC interface', (_q, res, base) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(card(base, { supportedInterfaces: [{ url: `${base}/grpc`, protocolBinding: 'GRPC', protocolVersion: '1.0' }] }))) }, 'A2A_CARD_INVALID', /offers no interface this provider can use \(GRPC http:\/\/127\.0\.0\.1:\d+\/grpc: binding "GRPC" is not one of JSONRPC, HTTP\+JSON\)/],
    ['an interface on another origin', (_q, res) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(card('http://127.0.0.2:9'))) }, 'A2A_CARD_INVALID', /it is on another origin than the card \(http:\/\/127\.0\.0\.2:9; set allowCrossOrigin to follow it\)/],
    ['an interface over plain http to a remote host', (_q, res) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(card('http://example.com'))) }, 'A2A_CARD_INVALID', /plain http to example\.com, which is not a loopback host/],
    ['a 500', (_q, res) => { res.statusCode = 500; res.end('boom') }, 'A2A_CARD_UNREACHABLE', /Could not fetch the agent card at http:\/\/127\.0\.0\.1:\d+\/\.well-known\/agent-card\.json: HTTP 500 Internal Server Error/],
    ['a 404', (_q, res) => { res.statusCode = 404; res.end() }, 'A2A_CARD_UNREACHABLE', /HTTP 404 Not Found\. Check `url`/],
    ['headers but a body that never ends', (_q, res) => { res.setHeader('content-type', 'application/json'); res.write('{"name":') }, 'A2A_CARD_INVALID', /Could not read the agent card at .*: no answer within 1000 ms \(cardTimeout\)/],
    ['no answer at all', () => {}, 'A2A_CARD_UNREACHABLE', /Could not fetch the agent card at .*: no answer within 1000 ms \(cardTimeout\)/],
    ['a card bigger than maxResponseBytes', (_q, res, base) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(card(base, { description: 'x'.repeat(10_000) }))) }, 'A2A_CARD_INVALID', /the remote sent more than 2048 bytes \(maxResponseBytes\)/],
  ]
  for (const [what, handler, code, message] of cases) {
    it(`${what}: the load fails with ${code}, naming the URL and what is wrong`, async () => {
      const base = await serve(handler)
      const error = await loadError(base, { maxResponseBytes: 2048 })
      expect(error.message, error.message).to.match(message)
      expect((error as a2a.A2aError).code).to.equal(code)
    })
  }

  it('a refused connection: A2A_CARD_UNREACHABLE naming the URL and the cause', async () => {
    const base = await serve(() => {})
    await Promise.all(closers.splice(0).map((close) => close()))
    const error = await loadError(base)
    expect(error.code).to.equal('A2A_CARD_UNREACHABLE')
    expect(error.message).to.match(/Could not fetch the agent card at http:\/\/127\.0\.0\.1:\d+\/\.well-known\/agent-card\.json: ECONNREFUSED/)
  })

  it('config problems fail before any request: not a URL, http to a remote host, credentials in the URL', async () => {
    expect((await loadError('not a url')).message).to.match(/config\.url "not a url" is not a URL/)
    expect((await loadError('http://example.com/agent')).message).to.match(/plain http to example\.com, which is not a loopback host \(use https, or set allowHttp\)/)
    expect((await loadError('http://user:pw@127.0.0.1:9')).message).to.match(/carries credentials/)
    expect((await loadError('http://127.0.0.1:9', { requestTimeout: 0 })).code).to.equal('A2A_INVALID_CONFIG')
  })

  it('a send answered with a 500: start rejects A2A_SEND_FAILED with the status; a slow send answer is cut by requestTimeout', async () => {
    let mode = '500'
    const base = await serve((req, res, base) => {
      if (req.url?.startsWith('/.well-known')) {
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify(card(base, { capabilities: { streaming: false } })))
      } else if (mode === '500') {
        res.statusCode = 500
        res.end('internal trouble')
      } else {
        res.setHeader('content-type', 'application/json')
        res.write('{"jsonrpc":"2.0",')
      }
    })
    const remote = await provider(base, { requestTimeout: 1_000 })
    const failed = await within(remote.start(request()).then(() => undefined, (e) => e), 10_000, 'start')
    expect(failed.code).to.equal('A2A_SEND_FAILED')
    expect(failed.message).to.match(/The remote agent "raw" at http:\/\/127\.0\.0\.1:\d+ did not accept the task: .*500/)
    mode = 'slow'
    const slow = await within(remote.start(request()).then(() => undefined, (e) => e), 10_000, 'start')
    expect(slow.code).to.equal('A2A_SEND_FAILED')
    expect(slow.message).to.match(/no answer within 1000 ms \(requestTimeout\)/)
  })

  it('a stream answered as application/json instead of text/event-stream: start rejects A2A_SEND_FAILED', async () => {
    const base = await serve((req, res, base) => {
      res.setHeader('content-type', 'application/json')
      if (req.url?.startsWith('/.well-known')) res.end(JSON.stringify(card(base)))
      else res.end('{"jsonrpc":"2.0","id":0,"result":{}}')
    })
    const remote = await provider(base)
    const failed = await within(remote.start(request()).then(() => undefined, (e) => e), 10_000, 'start')
    expect(failed.code).to.equal('A2A_SEND_FAILED')
    expect(failed.message).to.match(/Invalid response Content-Type for SSE stream/)
  })

  it('a stream that stops talking mid-task ends the run as an error naming idleTimeout', async () => {
    const base = await serve((req, res, base) => {
      if (req.url?.startsWith('/.well-known')) {
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify(card(base)))
        return
      }
      let body = ''
      req.on('data', (chunk) => { body += chunk })
      req.on('end', () => {
        const id = JSON.parse(body).id
        res.setHeader('content-type', 'text/event-stream')
        const task = { id: 't-1', contextId: 'c-1', status: { state: 'TASK_STATE_WORKING' } }
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { task } })}\n\n`)
        // ... and then nothing, forever.
      })
    })
    const remote = await provider(base, { idleTimeout: 500 })
    const run = await within(remote.start(request()), 10_000, 'start')
    expect(run.childId).to.equal('t-1')
    const result = await within(run.result, 10_000, 'result')
    await within(run.dispose(), 10_000, 'dispose')
    expect(result.stopReason).to.equal('error')
    expect(result.diagnostic).to.match(/Lost the remote task t-1 .*: the stream was silent for 500 ms \(idleTimeout\)/)
  })

  it('as a plugin: a bad card fails only this plugin (logged with the URL); the app and ctx.subagents run on', async () => {
    const base = await serve((_q, res) => { res.statusCode = 500; res.end() })
    const ctx = new Context()
    ctx.plugin(SubagentService)
    const errors: unknown[] = []
    ctx.on('internal/error', (error: unknown) => { errors.push(error) })
    const fork = ctx.plugin(a2a, { url: base, cardTimeout: 1_000 } as a2a.Config)
    await ctx.start()
    await ctx.lifecycle.flush()
    expect(ctx.subagents.get('a2a')).to.equal(undefined)
    expect(String((fork as any).error ?? errors[0])).to.match(/HTTP 500/)
    // A healthy remote loaded beside it registers.
    const good = await startScriptedServer({ streaming: true })
    closers.push(good.close)
    ctx.plugin(a2a, { url: good.url, name: 'remote' } as a2a.Config)
    await ctx.lifecycle.flush()
    expect(ctx.subagents.get('remote')?.description).to.match(/^the remote agent "scripted agent" at http:\/\/127\.0\.0\.1:\d+ over A2A: A scripted A2A agent for tests\./)
    await ctx.stop()
  })
})
