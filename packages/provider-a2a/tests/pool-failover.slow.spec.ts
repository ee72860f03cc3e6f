// Hosts that fail: a start fails over only when the host never took the request (nothing runs
// twice); a host gone mid-task ends the run with a clear error, unless another endpoint answers for
// the task (a shared task store); every host down rejects listing each; health comes back on a card read.
import { expect } from 'chai'
import { InMemoryTaskStore, type ServerCallContext } from '@a2a-js/sdk/server'
import { type Task, TaskState } from '@a2a-js/sdk'
import type { A2aError } from '../src/index.js'
import { startHostileRemote } from './fixtures/hostile-remote.js'
import { type ScriptedServer, startScriptedServer } from './fixtures/scripted-server.js'
import { pool, request, until, within } from './helpers.js'

const BOUND = 10_000

/** A task store that remembers the call context it saw, so a test can write a task as the hosts would. */
class SharedStore extends InMemoryTaskStore {
  context?: ServerCallContext
  /** Task reads (a `tasks/get` is one). */
  loads = 0
  override async load(id: string, context: ServerCallContext) {
    this.loads++
    return super.load(id, context)
  }

  override async save(task: Task, context: ServerCallContext) {
    this.context = context
    return super.save(task, context)
  }
}

describe('provider-a2a: endpoints that fail', function () {
  this.timeout(30_000)
  const closers: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  async function servers(count: number, options: { streaming?: boolean; taskStore?: InMemoryTaskStore } = {}): Promise<ScriptedServer[]> {
    const { streaming = true, taskStore } = options
    const started = await Promise.all(Array.from({ length: count }, () => startScriptedServer({ streaming, taskStore })))
    for (const server of started) closers.push(server.close)
    return started
  }

  const sendsOf = (list: ScriptedServer[]) => list.map((server) => server.sends.length)
  const hostOf = (server: ScriptedServer) => new URL(server.url).host

  for (const streaming of [true, false]) {
    it(`${streaming ? 'streamed' : 'polled'}: a host that went away (connection refused) is failed over to the next; the task runs once`, async () => {
      const hosts = await servers(3, { streaming })
      const remote = await pool(hosts.map((host) => host.url))
      closers.push(remote.dispose)
      await hosts[0].kill()
      const run = await within(remote.start(request({ prompt: 'complete' })), BOUND, 'start')
      expect(run.origin).to.equal(hostOf(hosts[1]))
      expect(await within(run.result, BOUND, 'result')).to.include({ stopReason: 'completed', output: 'the answer' })
      await within(run.dispose(), BOUND, 'dispose')
      expect(sendsOf(hosts)).to.deep.equal([0, 1, 0])
      const [dead, ...rest] = remote.endpoints()
      expect(dead).to.include({ healthy: false, outstanding: 0 })
      expect(dead.lastError).to.match(/did not take a task: fetch failed \(ECONNREFUSED\)/)
      expect(rest.map((endpoint) => endpoint.healthy)).to.deep.equal([true, true])
      // The unhealthy endpoint comes last now: the next task goes to a healthy one.
      const next = await within(remote.start(request({ prompt: 'complete' })), BOUND, 'start')
      expect(next.origin).to.equal(hostOf(hosts[2]))
      await within(next.result, BOUND, 'result')
      await within(next.dispose(), BOUND, 'dispose')
    })
  }

  it('a 503 before any task id fails over; a 504 does not (the host may be running the task): A2A_SEND_FAILED, nothing sent elsewhere', async () => {
    const hosts = await servers(2)
    const remote = await pool(hosts.map((host) => host.url))
    closers.push(remote.dispose)
    hosts[0].failWith(503)
    const run = await within(remote.start(request({ prompt: 'complete' })), BOUND, 'start')
    expect(run.origin).to.equal(hostOf(hosts[1]))
    await within(run.result, BOUND, 'result')
    await within(run.dispose(), BOUND, 'dispose')
    expect(sendsOf(hosts)).to.deep.equal([0, 1])
    expect(remote.endpoints()[0].lastError).to.match(/HTTP 503/)

    // A fresh pool starts on endpoint 0 again; this time it answers 504.
    hosts[0].failWith(undefined)
    const other = await pool(hosts.map((host) => host.url))
    closers.push(other.dispose)
    hosts[0].failWith(504)
    const error = await within(other.start(request({ prompt: 'complete' })).then(() => undefined, (failure: A2aError) => failure), BOUND, 'start')
    expect(error).to.have.property('code', 'A2A_SEND_FAILED')
    expect(error!.message, error!.message).to.match(/did not accept the task: .*504/)
    expect(sendsOf(hosts)).to.deep.equal([0, 1])
    expect(other.endpoints()[0]).to.include({ healthy: false, outstanding: 0 })
  })

  for (const streaming of [true, false]) {
    it(`${streaming ? 'streamed' : 'polled'}: a host that read the request and dropped the connection is not failed over (it may run the task)`, async () => {
      const dropping = await startHostileRemote({ version: '1.0', streaming, handler: (_rpc, res) => void res.socket?.destroy() })
      closers.push(dropping.close)
      const [host] = await servers(1, { streaming })
      const remote = await pool([dropping.url, host.url])
      closers.push(remote.dispose)
      const error = await within(remote.start(request({ prompt: 'complete' })).then(() => undefined, (failure: A2aError) => failure), BOUND, 'start')
      expect(error).to.have.property('code', 'A2A_SEND_FAILED')
      expect(error!.message).to.match(/"hostile" at http:\/\/127\.0\.0\.1:\d+ did not accept the task/)
      expect(dropping.calls.map((call) => call.call)).to.deep.equal([streaming ? 'stream' : 'send'])
      expect(host.sends).to.have.length(0)
      expect(remote.endpoints()[0]).to.include({ healthy: false, outstanding: 0 })
    })
  }

  for (const streaming of [true, false]) {
    it(`${streaming ? 'streamed' : 'polled'}: a host that dies mid-task ends the run with an error naming the host and the task, and no other host runs it`, async () => {
      const hosts = await servers(3, { streaming })
      // Polled: unanswered polls end the run after idleTimeout (a failed poll may be a blip).
      const remote = await pool(hosts.map((host) => host.url), { idleTimeout: 1_000 })
      closers.push(remote.dispose)
      const run = await within(remote.start(request({ prompt: 'wait' })), BOUND, 'start')
      expect(run.origin).to.equal(hostOf(hosts[0]))
      await until(() => hosts[0].running() === 1, 'the task runs')
      await hosts[0].crash()
      const result = await within(run.result, BOUND, 'the result after the host died')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include(`Lost the remote task ${run.childId}`)
      expect(result.diagnostic).to.include(hostOf(hosts[0]))
      if (streaming) {
        expect(result.diagnostic).to.match(new RegExp(`the agent host ${hostOf(hosts[0])} went away while running task ${run.childId}: its stream (broke|ended) while the task was working`))
        expect(result.diagnostic).to.match(/tasks\/get there failed \(fetch failed \(ECONNREFUSED\)\); no other endpoint knows the task/)
      } else {
        expect(result.diagnostic).to.match(/no poll was answered for 1000 ms \(idleTimeout\)/)
      }
      await within(run.dispose(), BOUND, 'dispose')
      expect(sendsOf(hosts)).to.deep.equal([1, 0, 0])
      expect(remote.endpoints()[0]).to.include({ healthy: false, outstanding: 0 })
    })
  }

  for (const streaming of [true, false]) {
    it(`${streaming ? 'streamed' : 'polled'}: a host that dies mid-task while another host shares its task store: the run continues there and ends with the stored result, sent once`, async () => {
      const store = new SharedStore()
      const hosts = await servers(2, { taskStore: store, streaming })
      const remote = await pool(hosts.map((host) => host.url), { idleTimeout: 5_000 })
      closers.push(remote.dispose)
      const built = request({ prompt: 'wait' })
      const run = await within(remote.start(built), BOUND, 'start')
      expect(run.origin).to.equal(hostOf(hosts[0]))
      await until(() => hosts[0].running() === 1, 'the task runs')
      await hosts[0].crash()
      // What a surviving host would write when it finished the task (here: the test, as that host).
      await until(() => remote.endpoints()[0].healthy === false, 'the dead host noticed')
      const task = (await store.load(run.childId!, store.context!))!
      await store.save({
        ...task,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [{ artifactId: 'answer', name: 'answer', description: '', parts: [{ content: { $case: 'text', value: 'finished elsewhere' }, mediaType: 'text/plain', filename: '', metadata: undefined }], metadata: undefined, extensions: [] }],
      }, store.context!)
      const result = await within(run.result, BOUND, 'the result through the other host')
      expect(result).to.include({ stopReason: 'completed', output: 'finished elsewhere' })
      await within(run.dispose(), BOUND, 'dispose')
      expect(sendsOf(hosts)).to.deep.equal([1, 0])
      expect(remote.endpoints().map((endpoint) => endpoint.healthy)).to.deep.equal([false, true])
    })
  }

  it('one url whose stream is cut while its host still runs the task (a proxy dropped it): the run follows the task by polls there', async () => {
    const store = new SharedStore()
    const [host] = await servers(1, { taskStore: store })
    const remote = await pool([host.url])
    closers.push(remote.dispose)
    const run = await within(remote.start(request({ prompt: 'wait' })), BOUND, 'start')
    await until(() => host.running() === 1, 'the task runs')
    const loads = store.loads
    host.dropConnections()
    // Polled there (tasks/get reads the store), and still followed: a cancel reaches the host and
    // the run ends aborted with the remote's confirmation.
    await until(() => store.loads > loads + 1, 'tasks/get polls after the stream was cut')
    expect(remote.endpoints()[0]).to.include({ healthy: true, outstanding: 1 })
    run.cancel('enough')
    const result = await within(run.result, BOUND, 'result')
    expect(result).to.include({ stopReason: 'aborted' })
    expect(result.diagnostic).to.match(/The remote task was canceled/)
    expect(host.cancels).to.deep.equal([run.childId])
    expect(host.sends).to.have.length(1)
    await within(run.dispose(), BOUND, 'dispose')
  })

  it('one url (a load balancer) whose first read after the stream broke answers 502: the run reads again and follows the task there', async () => {
    const store = new SharedStore()
    const [host] = await servers(1, { taskStore: store })
    const remote = await pool([host.url])
    closers.push(remote.dispose)
    const run = await within(remote.start(request({ prompt: 'wait' })), BOUND, 'start')
    await until(() => host.running() === 1, 'the task runs')
    const loads = store.loads
    // As nginx answers when its kept-alive connection to a host that died breaks under the read.
    host.failWith(502, 1)
    host.dropConnections()
    await until(() => store.loads > loads, 'a later tasks/get read the task')
    expect(host.refusals()).to.equal(1)
    run.cancel('enough')
    const result = await within(run.result, BOUND, 'result')
    expect(result, result.diagnostic).to.include({ stopReason: 'aborted' })
    expect(host.cancels).to.deep.equal([run.childId])
    await within(run.dispose(), BOUND, 'dispose')
  })

  it('every endpoint down: the start rejects A2A_SEND_FAILED listing each endpoint and its error', async () => {
    const hosts = await servers(3)
    const remote = await pool(hosts.map((host) => host.url))
    closers.push(remote.dispose)
    await Promise.all(hosts.map((host) => host.kill()))
    const error = await within(remote.start(request({ prompt: 'complete' })).then(() => undefined, (failure: A2aError) => failure), BOUND, 'start')
    expect(error).to.have.property('code', 'A2A_SEND_FAILED')
    expect(error!.message).to.match(/^No agent host took the task; each was tried once and none received it/)
    for (const [i, host] of hosts.entries()) {
      expect(error!.message).to.include(`${i + 1}. ${host.url}/: fetch failed (ECONNREFUSED), unhealthy since`)
    }
    const states = remote.endpoints().map((endpoint) => [endpoint.healthy, endpoint.outstanding])
    expect(states).to.deep.equal([[false, 0], [false, 0], [false, 0]])
  })

  it('an onHealth listener that throws (on a recovery) breaks no start: the run the host took is handed over and counted once', async () => {
    const [host] = await servers(1)
    const heard: boolean[] = []
    const remote = await pool([host.url], {
      // Reads lastError, which a healthy snapshot has not: it throws when the endpoint recovers.
      onHealth: (health) => { heard.push(health.healthy); void health.lastError!.slice(0, 80) },
    })
    closers.push(remote.dispose)
    host.failWith(503, 1)
    const failed = await within(remote.start(request({ prompt: 'complete' })).then(() => undefined, (error: A2aError) => error), BOUND, 'start')
    expect(failed).to.have.property('code', 'A2A_SEND_FAILED')
    expect(remote.endpoints()[0]).to.include({ healthy: false, outstanding: 0 })
    const run = await within(remote.start(request({ prompt: 'complete' })), BOUND, 'start after the recovery')
    expect(heard).to.deep.equal([false, true])
    expect(run.origin).to.equal(hostOf(host))
    expect(await within(run.result, BOUND, 'result')).to.include({ stopReason: 'completed' })
    await within(run.dispose(), BOUND, 'dispose')
    expect(remote.endpoints()[0]).to.include({ healthy: true, outstanding: 0 })
    expect(sendsOf([host])).to.deep.equal([1])
    expect(host.refusals()).to.equal(1)
  })

  it('health: a card read that fails marks an endpoint unhealthy (starts go elsewhere); one that succeeds marks it healthy again', async () => {
    const hosts = await servers(2)
    const remote = await pool(hosts.map((host) => host.url), { retryDelay: 10 })
    closers.push(remote.dispose)
    hosts[0].failWith(503)
    const [down] = await within(remote.refreshEndpoints(), BOUND, 'refresh')
    expect(down).to.include({ healthy: false })
    expect(down.lastError).to.match(/Could not fetch the agent card at .*: HTTP 503/)
    expect(down.retryAt).to.be.a('number')
    hosts[0].failWith(undefined)
    // Starts go to the healthy endpoint; a start after the backoff reads the sick one's card again, in the background.
    const run = await within(remote.start(request({ prompt: 'complete' })), BOUND, 'start')
    expect(run.origin).to.equal(hostOf(hosts[1]))
    await within(run.result, BOUND, 'result')
    await within(run.dispose(), BOUND, 'dispose')
    expect(sendsOf(hosts)).to.deep.equal([0, 1])
    await until(() => Date.now() > down.retryAt!, 'the backoff passed')
    const again = await within(remote.start(request({ prompt: 'complete' })), BOUND, 'start')
    await within(again.result, BOUND, 'result')
    await within(again.dispose(), BOUND, 'dispose')
    await until(() => remote.endpoints()[0].healthy, 'healthy again after its card was read')
    expect(remote.endpoints()[0]).to.not.have.property('lastError')
  })
})
