// A host of a pool stops gracefully while starts go out: no start is lost. provider-a2a sends each
// start over a connection of its own (never a kept-alive one a stopping host may be closing), and
// serve-a2a, while it stops, answers a request that still reaches it over an open connection with
// 503 HOST_STOPPING instead of cutting the connection; a refused connect and a 503 both fail over
// (the host cannot have run the task). Real hosts on 127.0.0.1.
import { Agent as HttpAgent, request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { type Agent, ScriptedModel } from '@cordis-subagents/agent'
import { createA2aProvider } from '@cordis-subagents/provider-a2a'
import A2aServer from '@cordis-subagents/serve-a2a'
import { eventually as until } from './support/async.js'

const TOKEN = 'pool-graceful-stop-token'

interface Host { ctx: Context; server: A2aServer; url: string }

describe('a pool while one of its hosts stops gracefully (serve-a2a hosts, provider-a2a urls)', function () {
  this.timeout(60_000)
  const hosts: Host[] = []
  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.ctx.stop()
  })

  async function host(): Promise<Host> {
    const ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, { model: 'scripted' })
    ctx.plugin({
      name: 'fixture',
      inject: ['agents'],
      apply: (ctx: Context) => ctx.agents.registerModel('scripted', new ScriptedModel(() => ScriptedModel.text('pooled answer'))),
    })
    ctx.plugin(A2aServer, { tokens: [TOKEN] })
    await ctx.start()
    await ctx.lifecycle.flush()
    const made = { ctx, server: ctx.a2aServer, url: ctx.a2aServer.url }
    hosts.push(made)
    return made
  }

  const parent = { id: 'parent', depth: 0, cwd: process.cwd() } as unknown as Agent
  let counter = 0
  const request = () => ({ prompt: 'hello', parent, signal: new AbortController().signal, runId: `pool-stop-${++counter}`, depth: 1, maxDepthCeiling: 3 })

  it('8 starts sent as one host stops: all 8 complete on the others, none is refused', async () => {
    const [a, b, c] = [await host(), await host(), await host()]
    const remote = await createA2aProvider({ urls: [a.url, b.url, c.url], bearerToken: TOKEN, retryDelay: 60_000 })
    try {
      // Every host has taken a task (and holds kept-alive connections from the card reads and polls).
      for (let i = 0; i < 3; i++) {
        const run = await remote.start(request())
        expect((await run.result).output).to.equal('pooled answer')
        await run.dispose()
      }
      expect(remote.endpoints().map((endpoint) => endpoint.healthy)).to.deep.equal([true, true, true])
      const stopped = a.ctx.stop()
      const starts = Array.from({ length: 8 }, () => remote.start(request()).then(async (run) => {
        const result = await run.result
        await run.dispose()
        return { origin: run.origin, stopReason: result.stopReason, output: result.output }
      }))
      const outcomes = await Promise.allSettled(starts)
      await stopped
      const failures = outcomes.filter((outcome) => outcome.status === 'rejected').map((outcome) => String((outcome as PromiseRejectedResult).reason))
      expect(failures, failures.join('\n')).to.deep.equal([])
      type Outcome = { origin?: string; stopReason: string; output?: string }
      const results = outcomes.map((outcome) => (outcome as PromiseFulfilledResult<Outcome>).value)
      expect(results.map((result) => result.stopReason)).to.deep.equal(Array(8).fill('completed'))
      expect(results.map((result) => result.output)).to.deep.equal(Array(8).fill('pooled answer'))
      const others = [b, c].map((other) => new URL(other.url).host)
      for (const result of results) expect(others).to.include(result.origin)
    } finally {
      await remote.dispose()
    }
  })

  it('a request over a kept-alive connection while the host stops is answered 503 HOST_STOPPING with Connection: close, not cut', async () => {
    const a = await host()
    const target = new URL(a.url)
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 })
    type Answer = { status: number; reused: boolean; headers: Record<string, unknown>; body: string }
    const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }
    const send = (method: string, path: string, body?: string) => new Promise<Answer>((resolve, reject) => {
      const req = httpRequest({ host: target.hostname, port: target.port, method, path, agent, headers }, (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => text += chunk)
        res.on('end', () => resolve({ status: res.statusCode!, reused: req.reusedSocket, headers: res.headers, body: text }))
      })
      req.on('error', reject)
      req.end(body)
    })
    try {
      expect((await send('GET', '/.well-known/agent-card.json')).status).to.equal(200)
      // A request whose body has not all come holds the stop's drain open (up to 2 s).
      const slow = connect(Number(target.port), target.hostname)
      await new Promise<void>((resolve) => slow.once('connect', () => resolve()))
      slow.on('error', () => {})
      // Node answers `100 Continue` as it hands the request to the app: then the request is in flight.
      const continued = new Promise<void>((resolve) => slow.on('data', (chunk: Buffer) => chunk.toString().includes('100 Continue') && resolve()))
      slow.write(`POST /a2a/jsonrpc HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n{`)
      await continued
      const stopped = a.ctx.stop()
      // The listener is closed once the stop began: a new connection is refused.
      await until(() => new Promise<boolean>((resolve) => {
        const probe = connect(Number(target.port), target.hostname)
        probe.once('connect', () => { probe.destroy(); resolve(false) })
        probe.once('error', () => resolve(true))
      }), 'the listener closed')
      const answer = await send('POST', '/a2a/jsonrpc', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }))
      expect(answer.reused).to.equal(true)
      expect(answer.status).to.equal(503)
      expect(answer.headers.connection).to.equal('close')
      expect(JSON.parse(answer.body).error.data.code).to.equal('HOST_STOPPING')
      slow.destroy()
      await stopped
      hosts.splice(hosts.indexOf(a), 1)
    } finally {
      agent.destroy()
    }
  })
})
