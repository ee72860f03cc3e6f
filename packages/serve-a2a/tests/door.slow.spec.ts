// The door of serve-a2a under hostile clients: open subscriptions are capped (per task, per
// credential, in total), connections are capped, a request that trickles in is cut at its
// `requestTimeout` (not up to 30 s later), and a refused config fails the load with its one error.
import { randomUUID } from 'node:crypto'
import { connect, type Socket } from 'node:net'
import { request } from 'node:http'
import { expect } from 'chai'
import { Context, Logger } from 'cordis'
import AgentRuntime, { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import A2aServer, { ServeA2aError } from '../src/index.js'
import { bearer, rpc, serve, type Served } from './helpers.js'
import { eventually } from '@cordis-subagents/test-support'

/** Waits that span hosts sharing a store get 15 s. */
const until = <T>(check: () => T | Promise<T>, what: string, ms = 15_000) => eventually(check, what, { timeout: ms, every: 25 })

const TOKEN = 'door-token-0123456789abcdef'
const OTHER = 'door-other-0123456789abcdef'

const asking = (request: GenerateRequest) => request.messages.some((message) => message.role === 'tool')
  ? ScriptedModel.text('painted')
  : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] }

/** A SubscribeToTask stream held open: its HTTP status once the headers came, and a close. */
function subscribe(url: string, token: string, id: string): Promise<{ status: number; body: string; close(): void }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id } })
    const req = request(new URL('/a2a/jsonrpc', url), {
      method: 'POST', agent: false,
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', 'A2A-Version': '1.0', ...bearer(token) },
    }, (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8')
        if (res.statusCode === 200 && text.includes('data:')) resolve({ status: 200, body: text, close: () => req.destroy() })
      })
      res.on('end', () => resolve({ status: res.statusCode!, body: text, close: () => {} }))
      res.on('error', () => {})
    })
    req.on('error', reject)
    req.end(body)
  })
}

describe('serve-a2a: the door under hostile clients', function () {
  this.timeout(60_000)
  let served: Served | undefined

  afterEach(async () => {
    await served?.ctx.stop()
    served = undefined
  })

  it('subscriptions are capped per task, per credential and in total; a closed one frees its place', async () => {
    served = await serve({
      tokens: [TOKEN, OTHER], askParent: true, maxSubscriptions: 5, maxSubscriptionsPerCredential: 4, maxSubscriptionsPerTask: 3,
    }, asking)
    const { url } = served.server
    const start = async (token: string) => (await rpc(url, {
      jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'paint' }] } },
    }, { 'A2A-Version': '1.0', ...bearer(token) })).body.result.task.id as string
    const [first, second, third] = [await start(TOKEN), await start(TOKEN), await start(OTHER)]
    const open = [await subscribe(url, TOKEN, first), await subscribe(url, TOKEN, first), await subscribe(url, TOKEN, first)]
    expect(open.map((stream) => stream.status)).to.deep.equal([200, 200, 200])
    const perTask = await subscribe(url, TOKEN, first)
    expect(perTask.status).to.equal(429)
    expect(JSON.parse(perTask.body).error).to.deep.include({ code: -32056 }).and.nested.include({ 'data.code': 'TOO_MANY_SUBSCRIPTIONS' })
    expect(JSON.parse(perTask.body).error.message).to.match(/maxSubscriptionsPerTask/)
    open.push(await subscribe(url, TOKEN, second))
    expect(open.at(-1)!.status).to.equal(200)
    const perCredential = await subscribe(url, TOKEN, second)
    expect(JSON.parse(perCredential.body).error.message).to.match(/maxSubscriptionsPerCredential/)
    open.push(await subscribe(url, OTHER, third))
    expect(open.at(-1)!.status).to.equal(200)
    const total = await subscribe(url, OTHER, third)
    expect(JSON.parse(total.body).error.message).to.match(/5 subscriptions are already open on this server \(maxSubscriptions\)/)
    expect(served.server.refusals.TOO_MANY_SUBSCRIPTIONS).to.equal(3)
    open.shift()!.close()
    const again = await until(async () => {
      const stream = await subscribe(url, TOKEN, first)
      return stream.status === 200 ? stream : (stream.close(), undefined)
    }, 'a closed subscription frees its place')
    open.push(again)
    for (const stream of open) stream.close()
  })

  it('connections past maxConnections are closed as they arrive (half-open ones included)', async () => {
    served = await serve({ tokens: [TOKEN], maxConnections: 20 })
    const { port } = served.server
    const sockets: Socket[] = []
    let closed = 0
    for (let i = 0; i < 60; i++) {
      const socket = connect(port, '127.0.0.1')
      socket.on('error', () => {})
      socket.on('close', () => { closed++ })
      sockets.push(socket)
    }
    try {
      await until(() => closed >= 40, 'the server closes the connections past its cap')
      expect(closed).to.equal(40)
    } finally {
      for (const socket of sockets) socket.destroy()
    }
  })

  it('a request that trickles in is cut at requestTimeout (408), not up to 30 s after it', async () => {
    served = await serve({ tokens: [TOKEN], requestTimeout: 1000 })
    const socket = connect(served.server.port, '127.0.0.1')
    let answer = ''
    socket.on('data', (chunk: Buffer) => { answer += chunk.toString('utf8') })
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()))
    socket.write(`POST /a2a/jsonrpc HTTP/1.1\r\nHost: 127.0.0.1:${served.server.port}\r\nContent-Type: application/json\r\n`
      + `Authorization: Bearer ${TOKEN}\r\nContent-Length: 100000\r\n\r\n{`)
    const drip = setInterval(() => socket.write(' '), 200)
    try {
      // Cut within the 1 s timeout plus Node's check interval, far below the 30 s its default check interval took.
      await Promise.race([ended, new Promise((_, reject) => setTimeout(() => reject(new Error('not cut within 15 s')), 15_000))])
    } finally {
      clearInterval(drip)
      socket.destroy()
    }
    expect(answer).to.match(/^HTTP\/1\.1 408/)
  })

  it('a refused config fails the load with its one error, and nothing after it', async () => {
    for (const config of [{ auth: 'none', host: '0.0.0.0' }, { tokensFromEnv: ['SERVE_A2A_DOOR_NOT_SET'] }, { shared: { url: 'mysql://x' } }]) {
      const lines: string[] = []
      const target = { colors: 0, record: (record: Logger.Record) => { if (record.type === 'error') lines.push(record.content) } }
      Logger.targets.push(target)
      const ctx = new Context()
      const errors: Error[] = []
      ctx.on('internal/error', (error: Error) => { errors.push(error) })
      try {
        ctx.plugin(ToolRegistry)
        ctx.plugin(AgentRuntime, {})
        ctx.plugin(A2aServer, config as never)
        await ctx.start()
        await ctx.lifecycle.flush()
        await ctx.stop()
      } finally {
        Logger.targets.splice(Logger.targets.indexOf(target), 1)
      }
      expect(errors, errors.map((error) => error.message).join('\n')).to.have.length(1)
      expect(errors[0]).to.be.instanceOf(ServeA2aError)
      expect(lines.join('\n')).to.not.match(/TypeError|maxConcurrentTasks/)
    }
  })
})
