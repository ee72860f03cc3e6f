// What push notifications keep and hold is bounded: a task's webhooks go with the task, a webhook's URL and id have a
// length bound, one POST has one deadline (a webhook that trickles its answer is cut), and a stop cuts what is still
// being delivered. Real receivers on 127.0.0.1.
import { randomUUID } from 'node:crypto'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { within } from '@cordis-subagents/test-support'
import { GuardedPushSender } from '../src/push-sender.js'
import type { CappedPushStore } from '../src/push-store.js'
import { bearer, rpc, serve, type Served } from './helpers.js'

const update = { payload: { $case: 'statusUpdate', value: { taskId: 'task-1', contextId: 'c', status: { state: 2 } } } }

describe('serve-a2a: push notifications are bounded', function () {
  this.timeout(30_000)
  const closers: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  /** A TCP receiver on 127.0.0.1 that does what `answer` does with each connection; the sockets it got. */
  async function rawReceiver(answer: (socket: Socket) => void): Promise<{ url: string; sockets: Socket[] }> {
    const sockets: Socket[] = []
    const server: Server = createServer((socket) => {
      sockets.push(socket)
      socket.on('error', () => {})
      socket.once('data', () => answer(socket))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    closers.push(() => new Promise((resolve) => {
      for (const socket of sockets) socket.destroy()
      server.close(resolve)
    }))
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, sockets }
  }

  function sender(url: string, timeout: number) {
    const settings = { allowHttp: true, allowHosts: new Set(['127.0.0.1']), timeout, retries: 0, retryDelay: 10, maxBodyBytes: 1e6 }
    const store = { loadWithMetadata: async () => [{ config: { id: 'hook', taskId: 'task-1', url, token: 't' }, wireVersion: '1.0' }] }
    const reports: string[] = []
    const push = new GuardedPushSender(store as unknown as CappedPushStore, settings, (code, message) => reports.push(`${code}: ${message}`), () => {})
    return { push, reports }
  }

  async function host(config: Record<string, unknown>): Promise<Served> {
    const served = await serve({ ...config, push: { enabled: true, allowHttp: true, allowHosts: ['127.0.0.1'], retries: 0, ...config.push as object } } as never)
    closers.push(() => served.ctx.stop())
    return served
  }

  function sendWithWebhook(served: Served, config: Record<string, unknown>, tenant?: string) {
    return rpc(served.server.url, {
      jsonrpc: '2.0', id: 1, method: 'SendMessage',
      params: {
        ...tenant ? { tenant } : {},
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] }, configuration: { taskPushNotificationConfig: config },
      },
    }, { 'A2A-Version': '1.0', ...bearer(served.server.token) })
  }

  it('a task\'s webhooks go with it: past maxStoredTasks tasks the server keeps the webhooks of at most that many', async () => {
    const hooks = createHttpServer((_req, res) => res.end())
    await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve))
    closers.push(() => new Promise((resolve) => hooks.close(resolve)))
    const url = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/${'long-path/'.repeat(300)}`
    const served = await host({ maxConcurrentTasks: 1, maxStoredTasks: 2 })
    for (let i = 0; i < 12; i++) {
      const answer = await sendWithWebhook(served, { url, token: 'client-token' }, i % 2 ? `tenant-${i}` : undefined)
      expect(answer.body.result?.task?.status?.state, JSON.stringify(answer.body)).to.equal('TASK_STATE_COMPLETED')
      await served.server.pushIdle()
    }
    expect(served.server.storedTasks).to.be.at.most(2)
    expect(served.server.webhookTasks).to.equal(served.server.storedTasks)
    expect(served.server.pushNotifications.delivered).to.be.greaterThan(12)
  })

  it('a webhook URL over 4,096 characters or a config id over 256 is refused when set, with its code', async () => {
    const served = await host({})
    const long = await sendWithWebhook(served, { url: `http://127.0.0.1:9/${'a'.repeat(4100)}`, token: 't' })
    expect(long.body.error?.message).to.match(/at most 4096 characters/)
    expect(JSON.stringify(long.body.error)).to.include('PUSH_TARGET_REFUSED')
    const id = await sendWithWebhook(served, { id: 'i'.repeat(257), url: 'http://127.0.0.1:9/hook', token: 't' })
    expect(id.body.error?.message).to.match(/config id must be a string of at most 256 characters/)
    expect(JSON.stringify(id.body.error)).to.include('PUSH_CONFIG_REFUSED')
    expect(served.server.webhookTasks).to.equal(0)
  })

  it('one POST has one deadline: a webhook that trickles its answer a byte at a time is cut at push.timeout', async () => {
    const timers: NodeJS.Timeout[] = []
    closers.push(async () => timers.forEach(clearInterval))
    const hook = await rawReceiver((socket) => {
      socket.write('HTTP/1.1 200 OK\r\nX-Slow: ')
      timers.push(setInterval(() => socket.write('a'), 50))
    })
    const { push, reports } = sender(hook.url, 400)
    await push.send(update as never, {} as never)
    await within(push.idle(), 10_000, 'the delivery ends')
    expect(reports).to.have.length(1)
    expect(reports[0]).to.match(/^PUSH_FAILED: .*no answer within 400 ms \(push\.timeout\)/)
  })

  it('a stop cuts what is still being delivered: the webhook\'s connection closes, the delivery is reported, nothing more is sent', async () => {
    const hook = await rawReceiver(() => {})
    const { push, reports } = sender(hook.url, 60_000)
    await push.send(update as never, {} as never)
    await within(new Promise<void>((resolve) => { const poll = setInterval(() => hook.sockets.length && (clearInterval(poll), resolve()), 10) }), 5000, 'the POST arrives')
    const closed = new Promise((resolve) => hook.sockets[0].once('close', resolve))
    push.stop()
    await within(push.idle(), 5000, 'the delivery ends at the stop')
    await within(closed, 5000, 'the webhook\'s connection closes')
    expect(reports).to.deep.equal([`PUSH_FAILED: push notification for task task-1 to ${hook.url}: not delivered, the server stopped`])
    await push.send(update as never, {} as never)
    await push.idle()
    expect(hook.sockets).to.have.length(1)
  })

  it('unloading the server cuts a delivery that hangs (its webhook connection closes), instead of holding it for push.timeout', async () => {
    const hook = await rawReceiver(() => {})
    const served = await serve({ push: { enabled: true, allowHttp: true, allowHosts: ['127.0.0.1'], retries: 0, timeout: 60_000 } } as never)
    const answer = await sendWithWebhook(served, { url: hook.url, token: 't' })
    expect(answer.body.result?.task?.status?.state).to.equal('TASK_STATE_COMPLETED')
    await within(new Promise<void>((resolve) => { const poll = setInterval(() => hook.sockets.length && (clearInterval(poll), resolve()), 10) }), 5000, 'a POST arrives')
    const closed = Promise.all(hook.sockets.map((socket) => new Promise((resolve) => socket.once('close', resolve))))
    await within(served.ctx.stop(), 10_000, 'the server stops')
    await within(closed, 5000, 'the webhook connections close at the stop')
    expect(served.server.pushNotifications.PUSH_FAILED).to.be.greaterThan(0)
  })
})
