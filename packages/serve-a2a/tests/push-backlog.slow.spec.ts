// A webhook slower than its task (down, slow, or one that never answers) holds a bounded backlog: at most
// push.maxQueued updates wait per webhook, the ones past it merge into a snapshot of the task's latest state, the
// update with the state the task stops in is always delivered, last, in order; after a delivery failed all its
// retries what waits collapses too; a task forgotten with its webhooks takes what waits for them along. The real
// server, real webhook receivers on 127.0.0.1 that hold their answers until the spec opens them (no timing).
import { randomUUID } from 'node:crypto'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { ScriptedModel, type GenerateRequest } from '@cordis-subagents/agent'
import type { GuardedPushSender } from '../src/push-sender.js'
import { bearer, rpc, serve, type Served } from './helpers.js'

/** Tool calls of each task: enough updates to overflow the small bounds below many times. */
const STEPS = 20

interface Hook {
  url: string
  /** Each POST's body as it arrived (an answer held or not). */
  got: any[]
  /** From now on every POST (the held ones first) is answered `status`, each after `delay` ms. */
  open(status?: number, delay?: number): void
}

/** A StreamResponse body's task id and state (1.0 JSON). */
const taskOf = (body: any): string | undefined => body.statusUpdate?.taskId ?? body.task?.id ?? body.artifactUpdate?.taskId
const stateOf = (body: any): string | undefined => body.statusUpdate?.status?.state ?? body.task?.status?.state

describe('serve-a2a: a slow webhook\'s backlog is bounded and still ends with the final state', function () {
  this.timeout(60_000)
  const closers: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  /** A receiver that records each POST and holds its answer until `open`. */
  async function heldHook(): Promise<Hook> {
    const got: any[] = []
    const held: ServerResponse[] = []
    let answer: { status: number; delay: number } | undefined
    const reply = (res: ServerResponse) => setTimeout(() => res.writeHead(answer!.status).end(), answer!.delay)
    const server = createServer((req, res) => {
      let text = ''
      req.setEncoding('utf8')
      req.on('data', (chunk: string) => text += chunk)
      req.on('end', () => {
        got.push(JSON.parse(text))
        if (answer) reply(res)
        else held.push(res)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    closers.push(() => new Promise((resolve) => {
      server.closeAllConnections()
      server.close(resolve)
    }))
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got,
      open(status = 200, delay = 0) {
        answer = { status, delay }
        for (const res of held.splice(0)) reply(res)
      },
    }
  }

  /** A server whose tasks each call `echo` STEPS times, one event-loop turn apart (one update each), then answer. */
  async function host(push: Record<string, unknown>, config: Record<string, unknown> = {}): Promise<Served> {
    const script = async (request: GenerateRequest) => {
      await new Promise((resolve) => setTimeout(resolve, 1))
      const calls = request.messages.filter((message) => message.role === 'tool').length
      return calls < STEPS ? ScriptedModel.call('echo', { text: `step ${calls}` }) : ScriptedModel.text('done')
    }
    const push10 = { enabled: true, allowHttp: true, allowHosts: ['127.0.0.1'], retries: 0, timeout: 60_000, ...push }
    const served = await serve({ ...config, push: push10 } as never, script)
    closers.push(() => served.ctx.stop())
    return served
  }

  const senderOf = (served: Served) => (served.server as unknown as { pushSender: GuardedPushSender }).pushSender

  async function runTask(served: Served, hookUrl?: string): Promise<string> {
    const answer = await rpc(served.server.url, {
      jsonrpc: '2.0', id: 1, method: 'SendMessage',
      params: {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'work' }] },
        configuration: hookUrl ? { taskPushNotificationConfig: { url: hookUrl, token: 't' } } : undefined,
      },
    }, { 'A2A-Version': '1.0', ...bearer(served.server.token) })
    expect(answer.body.result?.task?.status?.state, JSON.stringify(answer.body).slice(0, 300)).to.equal('TASK_STATE_COMPLETED')
    return answer.body.result.task.id
  }

  it('a webhook that does not answer during a long task: at most push.maxQueued wait, then it gets the final state last, the rest merged', async () => {
    const hook = await heldHook()
    const served = await host({ maxQueued: 4 })
    const taskId = await runTask(served, hook.url)
    const sender = senderOf(served)
    // The first POST is held (or still on its way); what came after it waits, within the bound.
    expect(hook.got.length).to.be.at.most(1)
    expect(sender.queued).to.be.at.most(4)
    hook.open()
    await served.server.pushIdle()
    expect(sender.queued).to.equal(0)
    // One POST in flight and at most maxQueued waiting: never one per update (the task made over STEPS).
    expect(hook.got.length).to.be.at.most(5)
    expect(hook.got.map(taskOf)).to.deep.equal(hook.got.map(() => taskId))
    expect(stateOf(hook.got.at(-1)), JSON.stringify(hook.got.at(-1)).slice(0, 300)).to.equal('TASK_STATE_COMPLETED')
    // The merged updates became a snapshot of the task (its whole state: the progress they said is in its history).
    const snapshots = hook.got.filter((body) => body.task?.status?.state === 'TASK_STATE_WORKING' && body.task.history?.length > STEPS / 2)
    expect(snapshots, JSON.stringify(hook.got.map(stateOf))).to.have.length.greaterThan(0)
    const counts = served.server.pushNotifications
    expect(counts.delivered).to.equal(hook.got.length)
    expect(counts.PUSH_COALESCED).to.be.greaterThan(STEPS - 5)
  })

  it('a slow webhook shared by several tasks gets each task\'s final state, last and in order, and at most maxQueued + 1 POSTs per task', async () => {
    const hook = await heldHook()
    const served = await host({ maxQueued: 3 })
    const tasks = await Promise.all([1, 2, 3].map(() => runTask(served, hook.url)))
    expect(senderOf(served).queued).to.be.at.most(3 * 3)
    // Slow from now on: every answer takes a while, and the backlog still ends.
    hook.open(200, 20)
    await served.server.pushIdle()
    for (const taskId of tasks) {
      const states = hook.got.filter((body) => taskOf(body) === taskId).map(stateOf)
      expect(states.length, `${taskId}: ${states}`).to.be.within(2, 4)
      expect(states.at(-1), `${taskId}: ${states}`).to.equal('TASK_STATE_COMPLETED')
      expect(states.indexOf('TASK_STATE_COMPLETED'), `${taskId}: ${states}`).to.equal(states.length - 1)
    }
    expect(served.server.pushNotifications.delivered).to.equal(hook.got.length)
  })

  it('after a delivery failed all its retries, what waits collapses: a webhook that is down gets the final state, not every update', async () => {
    const hook = await heldHook()
    const served = await host({ maxQueued: 8 })
    const taskId = await runTask(served, hook.url)
    // Down from now on: the held POST fails, and so does everything after it.
    hook.open(503)
    await served.server.pushIdle()
    // The first POST, then the latest state and the final one: not the up to 8 that waited, one by one.
    expect(hook.got.length, JSON.stringify(hook.got.map(stateOf))).to.be.within(2, 3)
    expect(stateOf(hook.got.at(-1))).to.equal('TASK_STATE_COMPLETED')
    expect(hook.got.map(taskOf)).to.deep.equal(hook.got.map(() => taskId))
    const counts = served.server.pushNotifications
    expect(counts.PUSH_FAILED).to.equal(hook.got.length)
    expect(counts.PUSH_COALESCED).to.be.greaterThan(STEPS - 3)
  })

  it('a webhook its client deletes gets nothing more: what waits for it goes; the POST in flight ends', async () => {
    const hook = await heldHook()
    const served = await host({ maxQueued: 4 })
    const taskId = await runTask(served, hook.url)
    expect(senderOf(served).queued).to.be.greaterThan(0)
    const headers = { 'A2A-Version': '1.0', ...bearer(served.server.token) }
    const listed = await rpc(served.server.url, { jsonrpc: '2.0', id: 2, method: 'ListTaskPushNotificationConfigs', params: { taskId } }, headers)
    const configs = listed.body.result?.configs as { id: string }[] | undefined
    expect(configs, JSON.stringify(listed.body)).to.have.length(1)
    const deleted = await rpc(served.server.url, {
      jsonrpc: '2.0', id: 3, method: 'DeleteTaskPushNotificationConfig', params: { taskId, id: configs![0]!.id },
    }, headers)
    expect(deleted.body.error, JSON.stringify(deleted.body)).to.equal(undefined)
    expect(senderOf(served).queued).to.equal(0)
    hook.open()
    await served.server.pushIdle()
    expect(hook.got.length).to.equal(1)
    expect(served.server.pushNotifications.PUSH_DROPPED).to.be.within(1, 4)
  })

  it('a task forgotten with its webhooks (past maxStoredTasks) takes what waits for them along; the POST in flight ends', async () => {
    const hook = await heldHook()
    const served = await host({ maxQueued: 4 }, { maxConcurrentTasks: 1, maxStoredTasks: 1 })
    const taskId = await runTask(served, hook.url)
    expect(senderOf(served).queued).to.be.greaterThan(0)
    // A second task pushes the first out of the store, and its webhooks with it.
    await runTask(served)
    expect(served.server.webhookTasks).to.equal(0)
    expect(senderOf(served).queued).to.equal(0)
    hook.open()
    await served.server.pushIdle()
    expect(hook.got.map(taskOf)).to.deep.equal([taskId])
    const counts = served.server.pushNotifications
    expect(counts.delivered).to.equal(1)
    expect(counts.PUSH_DROPPED).to.be.within(1, 4)
  })
})
