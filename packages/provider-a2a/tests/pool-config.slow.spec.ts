// `url` or `urls`: exactly one, each URL checked like `url`, no duplicates, at most 32; a pool loads
// when at least one endpoint's card can be used, and fails listing each when none can.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { Context } from 'cordis'
import SubagentService from '@cordis-subagents/subagents-service'
import * as a2aPlugin from '../src/index.js'
import { type A2aError, createA2aProvider } from '../src/index.js'
import { startScriptedServer } from './fixtures/scripted-server.js'
import { captureLogs } from '../../../test/support/logs.js'
import { deadUrl, pool, within } from './helpers.js'

async function rejection(promise: Promise<unknown>): Promise<A2aError> {
  try {
    await promise
  } catch (error) {
    return error as A2aError
  }
  throw new Error('expected a rejection')
}

describe('provider-a2a: url or urls', function () {
  this.timeout(20_000)
  const closers: Array<() => Promise<void>> = []
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()))
  })

  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    ['neither url nor urls', {}, /url is required/],
    ['both url and urls', { url: 'http://127.0.0.1:1', urls: ['http://127.0.0.1:2'] }, /url and urls are both set/],
    ['an empty urls', { urls: [] }, /urls must list 1-32 URLs, got 0/],
    ['33 urls', { urls: Array.from({ length: 33 }, (_, i) => `http://127.0.0.1:${1000 + i}`) }, /urls must list 1-32 URLs, got 33/],
    ['a duplicate', { urls: ['http://127.0.0.1:7/', 'http://127.0.0.1:8', 'http://127.0.0.1:7'] }, /urls\[2\] http:\/\/127\.0\.0\.1:7\/ is listed twice/],
    ['one that is not a URL', { urls: ['http://127.0.0.1:7', 'nope'] }, /urls\[1\] "nope" is not a URL/],
    ['plain http to another host', { urls: ['http://127.0.0.1:7', 'http://agents.example.com'] }, /urls\[1\] http:\/\/agents\.example\.com\/ cannot be used: plain http/],
    ['credentials in one', { urls: ['http://user:pw@127.0.0.1:7'] }, /urls\[0\] .* carries credentials/],
  ]
  for (const [what, config, message] of bad) {
    it(`${what}: A2A_INVALID_CONFIG at load, before any request`, async () => {
      const error = await rejection(createA2aProvider(config as never))
      expect(error).to.have.property('code', 'A2A_INVALID_CONFIG')
      expect(error.message).to.match(message)
    })
  }

  it('a pool whose first endpoint is down at load still loads: that endpoint is unhealthy with its card error, the others healthy', async () => {
    const live = await startScriptedServer({ streaming: true })
    closers.push(live.close)
    const dead = await deadUrl()
    const remote = await pool([dead, live.url])
    closers.push(remote.dispose)
    const [down, up] = remote.endpoints()
    expect(down).to.include({ url: `${dead}/`, healthy: false, outstanding: 0 })
    expect(down.lastError).to.match(/Could not fetch the agent card .*ECONNREFUSED/)
    expect(down).to.not.have.property('protocol')
    expect(up).to.include({ url: `${live.url}/`, healthy: true, protocol: '1.0', streaming: true, host: new URL(live.url).host })
    expect(remote.cardUrl).to.equal(`${live.url}/.well-known/agent-card.json`)
  })

  it('every endpoint down at load: A2A_CARD_UNREACHABLE listing each; one url keeps its own error as before', async () => {
    const [a, b] = [await deadUrl(), await deadUrl()]
    const error = await rejection(pool([a, b]))
    expect(error).to.have.property('code', 'A2A_CARD_UNREACHABLE')
    expect(error.message).to.match(/None of the 2 agent hosts could be used: 1\. Could not fetch the agent card at http:\/\/127\.0\.0\.1:\d+\/\.well-known\/agent-card\.json: ECONNREFUSED/)
    expect(error.message).to.include(`2. Could not fetch the agent card at ${b}/.well-known/agent-card.json`)
    const single = await rejection(createA2aProvider({ url: a, cardTimeout: 3_000 }))
    expect(single).to.have.property('code', 'A2A_CARD_UNREACHABLE')
    expect(single.message).to.match(/^Could not fetch the agent card at .*ECONNREFUSED/)
  })

  it('the plugin takes urls from config: one provider over every endpoint', async () => {
    const [one, two] = [await startScriptedServer({ streaming: true }), await startScriptedServer({ streaming: false })]
    closers.push(one.close, two.close)
    const ctx = new Context()
    ctx.plugin(SubagentService)
    ctx.plugin(a2aPlugin, { name: 'hosts', urls: [one.url, two.url] } as a2aPlugin.Config)
    await ctx.start()
    await ctx.lifecycle.flush()
    const provider = ctx.subagents.get('hosts') as unknown as a2aPlugin.A2aProvider
    expect(provider.endpoints().map((endpoint) => [endpoint.healthy, endpoint.streaming])).to.deep.equal([[true, true], [true, false]])
    await within(ctx.stop(), 10_000, 'ctx.stop()')
  })

  it('a config edit while the card is read: the first apply ends quietly, the edited one registers the provider', async () => {
    const remote = await startScriptedServer({ streaming: true })
    closers.push(remote.close)
    const card = await (await fetch(`${remote.url}/.well-known/agent-card.json`)).text()
    // The card, answered after 300 ms from another origin (its interface is the remote's).
    const slow = createServer((_req, res) => setTimeout(() => { res.setHeader('content-type', 'application/json'); res.end(card) }, 300))
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve))
    closers.push(() => new Promise<void>((resolve) => { slow.closeAllConnections(); slow.close(() => resolve()) }))
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`
    const ctx = new Context()
    const errors: unknown[] = []
    ctx.on('internal/error', (error) => { errors.push(error) })
    ctx.plugin(SubagentService)
    await ctx.start()
    const base = { name: 'remote', url, allowCrossOrigin: true } as a2aPlugin.Config
    const fork = ctx.plugin(a2aPlugin, base)
    await new Promise((resolve) => setTimeout(resolve, 100))
    fork.update({ ...base, description: 'edited' })
    await within(ctx.lifecycle.flush(), 10_000, 'the edited apply settles')
    expect(errors).to.deep.equal([])
    expect(ctx.subagents.get('remote')?.description).to.equal('edited')
    await within(ctx.stop(), 10_000, 'ctx.stop()')
  })

  it('the plugin logs an endpoint turning unhealthy (warning, with the error) and healthy again (info)', async () => {
    const [one, two] = [await startScriptedServer({ streaming: true }), await startScriptedServer({ streaming: true })]
    closers.push(one.close, two.close)
    const logs = captureLogs()
    try {
      const ctx = new Context()
      ctx.plugin(SubagentService)
      ctx.plugin(a2aPlugin, { name: 'hosts', urls: [one.url, two.url] } as a2aPlugin.Config)
      await ctx.start()
      await ctx.lifecycle.flush()
      const provider = ctx.subagents.get('hosts') as unknown as a2aPlugin.A2aProvider
      one.failWith(503)
      await within(provider.refreshEndpoints(), 10_000, 'refresh')
      one.failWith(undefined)
      await within(provider.refreshEndpoints(), 10_000, 'refresh')
      await within(ctx.stop(), 10_000, 'ctx.stop()')
    } finally {
      logs.restore()
    }
    const lines = logs.records.filter((record) => record.name === 'a2a' && record.type !== 'debug').map((record) => `${record.type} ${record.content}`)
    expect(lines, lines.join('\n')).to.have.length(2)
    expect(lines[0]).to.match(new RegExp(`^warn hosts: the agent host ${one.url}/ is unhealthy \\(retried after \\d+ ms\\): Could not fetch the agent card .*HTTP 503`))
    expect(lines[1]).to.equal(`info hosts: the agent host ${one.url}/ is healthy again`)
  })
})
