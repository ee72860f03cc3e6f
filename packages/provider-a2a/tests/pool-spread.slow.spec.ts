// Where a pool starts its tasks: the healthy endpoint with the fewest outstanding tasks, ties by
// round-robin; each endpoint in its own protocol version; the run's info names the host.
import { expect } from 'chai'
import { Context } from 'cordis'
import SubagentService from '@cordis-subagents/subagents-service'
import * as a2aPlugin from '../src/index.js'
import { type ScriptedServer, startScriptedServer } from './fixtures/scripted-server.js'
import { startScriptedServerV03 } from './fixtures/scripted-server-v03.js'
import { fakeParent, pool, request, until, within } from './helpers.js'

const BOUND = 10_000

describe('provider-a2a: spreading tasks over several endpoints', function () {
  this.timeout(30_000)
  const closers: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  async function servers(count: number, streaming = true): Promise<ScriptedServer[]> {
    const started = await Promise.all(Array.from({ length: count }, () => startScriptedServer({ streaming })))
    for (const server of started) closers.push(server.close)
    return started
  }

  const sendsOf = (list: ScriptedServer[]) => list.map((server) => server.sends.length)

  it('idle endpoints take sequential tasks in turn (round-robin), each task sent once', async () => {
    const hosts = await servers(3)
    const remote = await pool(hosts.map((host) => host.url))
    closers.push(remote.dispose)
    const origins: Array<string | undefined> = []
    for (let i = 0; i < 4; i++) {
      const run = await within(remote.start(request({ prompt: 'complete' })), BOUND, 'start')
      origins.push(run.origin)
      expect(await within(run.result, BOUND, 'result')).to.include({ stopReason: 'completed', output: 'the answer' })
      await within(run.dispose(), BOUND, 'dispose')
    }
    const host = (i: number) => new URL(hosts[i].url).host
    expect(origins).to.deep.equal([host(0), host(1), host(2), host(0)])
    expect(sendsOf(hosts)).to.deep.equal([2, 1, 1])
    expect(remote.endpoints().map((endpoint) => endpoint.outstanding)).to.deep.equal([0, 0, 0])
  })

  it('a task starts on the endpoint with the fewest outstanding tasks: a freed endpoint takes the next one', async () => {
    const hosts = await servers(3)
    const remote = await pool(hosts.map((host) => host.url))
    closers.push(remote.dispose)
    const runs = []
    for (let i = 0; i < 3; i++) runs.push(await within(remote.start(request({ prompt: 'wait' })), BOUND, 'start'))
    expect(sendsOf(hosts)).to.deep.equal([1, 1, 1])
    expect(remote.endpoints().map((endpoint) => endpoint.outstanding)).to.deep.equal([1, 1, 1])
    // Two more while all three are busy: ties again, so they go on in turn (0, then 1).
    runs.push(await within(remote.start(request({ prompt: 'wait' })), BOUND, 'start'))
    runs.push(await within(remote.start(request({ prompt: 'wait' })), BOUND, 'start'))
    expect(sendsOf(hosts)).to.deep.equal([2, 2, 1])
    // End both tasks of endpoint 1: it has the fewest now (0), so it takes the next task, not endpoint 2 (1).
    const onOne = runs.filter((run) => run.origin === new URL(hosts[1].url).host)
    expect(onOne).to.have.length(2)
    for (const run of onOne) {
      run.cancel('freeing the host')
      expect(await within(run.result, BOUND, 'result')).to.have.property('stopReason', 'aborted')
    }
    await until(() => remote.endpoints()[1].outstanding === 0, 'endpoint 1 freed')
    runs.push(await within(remote.start(request({ prompt: 'wait' })), BOUND, 'start'))
    expect(sendsOf(hosts)).to.deep.equal([2, 3, 1])
    expect(runs.at(-1)!.origin).to.equal(new URL(hosts[1].url).host)
    await within(Promise.all(runs.map((run) => run.dispose())), BOUND, 'dispose')
    expect(remote.endpoints().map((endpoint) => endpoint.outstanding)).to.deep.equal([0, 0, 0])
    for (const host of hosts) await until(() => host.running() === 0, 'nothing left running')
  })

  it('a pool of an A2A 0.3 host and an A2A 1.0 host: each spoken to in its own version', async () => {
    const v03 = await startScriptedServerV03({ streaming: true })
    closers.push(v03.close)
    const [v1] = await servers(1, false)
    const remote = await pool([v03.url, v1.url])
    closers.push(remote.dispose)
    expect(remote.endpoints().map((endpoint) => [endpoint.protocol, endpoint.streaming])).to.deep.equal([['0.3', true], ['1.0', false]])
    for (let i = 0; i < 2; i++) {
      const run = await within(remote.start(request({ prompt: 'complete' })), BOUND, 'start')
      expect(await within(run.result, BOUND, 'result')).to.include({ stopReason: 'completed', output: 'the answer' })
      await within(run.dispose(), BOUND, 'dispose')
    }
    expect([v03.sends.length, v1.sends.length]).to.deep.equal([1, 1])
    expect(v03.sends[0].metadata).to.have.nested.property('cordisSubagents.depth', 1)
    expect(v1.sends[0].metadata).to.have.nested.property('cordisSubagents.depth', 1)
  })

  it('through the service, the run info names the host that took the task (origin)', async () => {
    const hosts = await servers(2)
    const ctx = new Context()
    ctx.plugin(SubagentService)
    ctx.plugin(a2aPlugin, { name: 'hosts', urls: hosts.map((host) => host.url) } as a2aPlugin.Config)
    await ctx.start()
    await ctx.lifecycle.flush()
    const starts: string[] = []
    ctx.on('subagent/start', (info) => starts.push(info.origin ?? '(none)'))
    for (let i = 0; i < 2; i++) {
      const handle = await within(ctx.subagents.delegate('hosts', { prompt: 'complete', parent: fakeParent(), signal: new AbortController().signal }), BOUND, 'delegate')
      expect(await within(handle.result, BOUND, 'result')).to.have.property('stopReason', 'completed')
      await handle.dispose()
    }
    expect(starts).to.deep.equal(hosts.map((host) => new URL(host.url).host))
    await within(ctx.stop(), BOUND, 'ctx.stop()')
  })
})
