// Push notifications: a client's webhook gets each update of its task (with its token), through the
// SSRF guard: a loopback webhook is refused unless allow-listed, a host name is refused when it
// resolves to a loopback address, and a redirect is never followed. Real receivers on 127.0.0.1.
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { GuardedPushSender } from '../src/push-sender.js'
import type { CappedPushStore } from '../src/push-store.js'
import { bearer, rpc, serve, type Served } from './helpers.js'

interface Received { headers: IncomingMessage['headers']; body: any }

describe('serve-a2a: push notifications to a client\'s webhook, through the SSRF guard', function () {
  this.timeout(30_000)
  const closers: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  /** A webhook receiver on 127.0.0.1: what it got; it answers `status` (and `location`). */
  async function receiver(status = 200, location?: string): Promise<{ url: string; port: number; got: Received[] }> {
    const got: Received[] = []
    const server: Server = createServer((req, res) => {
      let text = ''
      req.setEncoding('utf8')
      req.on('data', (chunk: string) => text += chunk)
      req.on('end', () => {
        got.push({ headers: req.headers, body: JSON.parse(text || 'null') })
        res.writeHead(status, location ? { Location: location } : {}).end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    closers.push(() => new Promise((resolve) => server.close(resolve)))
    const { port } = server.address() as AddressInfo
    return { url: `http://127.0.0.1:${port}/hook`, port, got }
  }

  async function host(push: Record<string, unknown>): Promise<Served> {
    const served = await serve({ push: { enabled: true, allowHttp: true, retries: 0, ...push } as never })
    closers.push(() => served.ctx.stop())
    return served
  }

  /** A 0.3 client's blocking message/send with a webhook (`pushNotificationConfig`). */
  function send03(served: Served, pushNotificationConfig: { url: string; token: string }) {
    return rpc(served.server.url, {
      jsonrpc: '2.0', id: 1, method: 'message/send',
      params: {
        message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'hello' }] },
        configuration: { blocking: true, pushNotificationConfig },
      },
    }, bearer(served.server.token))
  }

  async function sendWithWebhook(served: Served, url: string, token = 'client-token') {
    const answer = await rpc(served.server.url, {
      jsonrpc: '2.0', id: 1, method: 'SendMessage',
      params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] }, configuration: { taskPushNotificationConfig: { url, token } } },
    }, { 'A2A-Version': '1.0', ...bearer(served.server.token) })
    expect(answer.body.result?.task?.status?.state, JSON.stringify(answer.body)).to.equal('TASK_STATE_COMPLETED')
    await served.server.pushIdle()
    return answer.body.result.task
  }

  it('an allow-listed receiver on 127.0.0.1 gets the task\'s updates, the token in X-A2A-Notification-Token, the last one the completed state', async () => {
    const hook = await receiver()
    const served = await host({ allowHosts: ['127.0.0.1'] })
    const card = await (await fetch(`${served.server.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json() as any
    expect(card.capabilities.pushNotifications).to.equal(true)
    const task = await sendWithWebhook(served, hook.url)
    expect(hook.got.length).to.be.greaterThan(0)
    for (const item of hook.got) {
      expect(item.headers['x-a2a-notification-token']).to.equal('client-token')
      expect(item.headers['content-type']).to.match(/^application\/(a2a\+)?json/)
      expect(JSON.stringify(item.body)).to.include(task.id)
    }
    expect(JSON.stringify(hook.got.at(-1)!.body)).to.include('TASK_STATE_COMPLETED')
    expect(served.server.pushNotifications).to.deep.equal({ delivered: hook.got.length })
  })

  it('a 0.3 client\'s webhook (message/send with pushNotificationConfig) gets the 0.3 shape, with its token', async () => {
    const hook = await receiver()
    const served = await host({ allowHosts: ['127.0.0.1'] })
    const answer = await send03(served, { url: hook.url, token: 'token-03' })
    expect(answer.body.result?.status?.state, JSON.stringify(answer.body)).to.equal('completed')
    await served.server.pushIdle()
    expect(hook.got.length).to.be.greaterThan(0)
    expect(hook.got.map((item) => item.headers['x-a2a-notification-token'])).to.deep.equal(hook.got.map(() => 'token-03'))
    expect(hook.got.at(-1)!.body.kind, JSON.stringify(hook.got.at(-1)!.body)).to.be.oneOf(['task', 'status-update'])
  })

  it('a loopback receiver without the allow-list, a name resolving to loopback, an IPv4-mapped address: refused, nothing reaches it, PUSH_TARGET_REFUSED', async () => {
    const hook = await receiver()
    const served = await host({})
    await sendWithWebhook(served, hook.url)
    await sendWithWebhook(served, `http://localhost:${hook.port}/hook`)
    await sendWithWebhook(served, `http://[::ffff:127.0.0.1]:${hook.port}/hook`)
    expect(hook.got).to.deep.equal([])
    expect(served.server.pushNotifications.delivered).to.equal(undefined)
    expect(served.server.pushNotifications.PUSH_TARGET_REFUSED).to.be.greaterThanOrEqual(3)
  })

  it('a redirect to another (private) address is not followed: PUSH_REDIRECT_REFUSED, the second receiver gets nothing', async () => {
    const inner = await receiver()
    const outer = await receiver(307, inner.url)
    const served = await host({ allowHosts: ['127.0.0.1'] })
    await sendWithWebhook(served, outer.url)
    expect(outer.got.length).to.be.greaterThan(0)
    expect(inner.got).to.deep.equal([])
    expect(served.server.pushNotifications.PUSH_REDIRECT_REFUSED).to.equal(outer.got.length)
  })

  it('a failing receiver is retried (bounded), then reported; the task is unharmed', async () => {
    const hook = await receiver(503)
    const served = await host({ allowHosts: ['127.0.0.1'], retries: 2, retryDelay: 10 })
    await sendWithWebhook(served, hook.url)
    const updates = served.server.pushNotifications.PUSH_FAILED
    expect(updates).to.be.greaterThan(0)
    expect(hook.got.length).to.equal(updates * 3)
  })

  it('a token or authentication that is no valid header value (a control character, non-Latin text, over 4,096 characters) is refused when set; nothing is sent, the server runs on', async () => {
    const hook = await receiver()
    const served = await host({ allowHosts: ['127.0.0.1'] })
    const v1 = { 'A2A-Version': '1.0', ...bearer(served.server.token) }
    const sendWith = (config: Record<string, unknown>) => rpc(served.server.url, {
      jsonrpc: '2.0', id: 1, method: 'SendMessage',
      params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] }, configuration: { taskPushNotificationConfig: { url: hook.url, ...config } } },
    }, v1)
    for (const config of [{ token: 'bad\u0001token' }, { token: 'caf\u00e9 \u20ac' }, { token: 'x'.repeat(4097) },
      { authentication: { scheme: 'Bearer', credentials: 'a\u0007b' } }, { authentication: { scheme: 'Bear\u007fer', credentials: 'ok' } }]) {
      const answer = await sendWith(config)
      expect(JSON.stringify(answer.body.error), JSON.stringify(answer.body).slice(0, 300)).to.match(/PUSH_CREDENTIAL_REFUSED/)
    }
    // A 0.3 client's config goes the same way.
    const v03 = await send03(served, { url: hook.url, token: 'bad\u0001token' })
    expect(JSON.stringify(v03.body.error), JSON.stringify(v03.body).slice(0, 300)).to.match(/PUSH_CREDENTIAL_REFUSED|holds a character a header cannot carry/)
    await served.server.pushIdle()
    expect(hook.got).to.deep.equal([])
    // A valid one still works, on the same server.
    const task = await sendWithWebhook(served, hook.url, 'plain-token_0123')
    expect(hook.got.length).to.be.greaterThan(0)
    expect(JSON.stringify(hook.got.at(-1)!.body)).to.include(task.id)
  })

  it('a delivery that throws (a credential Node refuses in a header, stored by a store that did not check it) is reported; the next update still goes', async () => {
    const hook = await receiver()
    const settings = { allowHttp: true, allowHosts: new Set(['127.0.0.1']), timeout: 5000, retries: 0, retryDelay: 10, maxBodyBytes: 1e6, maxConfigsPerTask: 4 }
    let token = 'bad\u0001token'
    const store = { loadWithMetadata: async () => [{ config: { id: 'hook', taskId: 'task-1', url: hook.url, token }, wireVersion: '1.0' }] }
    const reports: string[] = []
    let delivered = 0
    const sender = new GuardedPushSender(store as unknown as CappedPushStore, settings, (code, message) => reports.push(`${code}: ${message}`), () => delivered++)
    const update = { payload: { $case: 'statusUpdate', value: { taskId: 'task-1', contextId: 'c', status: { state: 2 } } } }
    await sender.send(update as never, {} as never)
    await sender.idle()
    expect(reports).to.have.length(1)
    expect(reports[0]).to.match(/^PUSH_FAILED: push notification for task task-1 to http:\/\/127\.0\.0\.1:\d+\/hook: Invalid character in header content/)
    token = 'good-token'
    await sender.send(update as never, {} as never)
    await sender.idle()
    expect(delivered).to.equal(1)
    expect(hook.got.map((item) => item.headers['x-a2a-notification-token'])).to.deep.equal(['good-token'])
  })

  it('a webhook that is not http(s), or http without allowHttp, is refused when set; a task has at most maxConfigsPerTask webhooks', async () => {
    const served = await host({ allowHttp: false, allowHosts: ['127.0.0.1'], maxConfigsPerTask: 1 })
    const answer = await rpc(served.server.url, {
      jsonrpc: '2.0', id: 1, method: 'SendMessage',
      params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] }, configuration: { taskPushNotificationConfig: { url: 'http://127.0.0.1:9/hook', token: 't' } } },
    }, { 'A2A-Version': '1.0', ...bearer(served.server.token) })
    expect(JSON.stringify(answer.body.error)).to.match(/must be https/)
    // A task with one webhook already (the cap here): a second is refused, the first can still be replaced.
    const served2 = await host({ allowHosts: ['127.0.0.1'], maxConfigsPerTask: 1 })
    const hook = await receiver()
    const task = await sendWithWebhook(served2, hook.url)
    const create = (id: string) => rpc(served2.server.url, {
      jsonrpc: '2.0', id: 2, method: 'CreateTaskPushNotificationConfig', params: { taskId: task.id, id, url: hook.url, token: 't2' },
    }, { 'A2A-Version': '1.0', ...bearer(served2.server.token) })
    const second = await create('second')
    expect(JSON.stringify(second.body.error), JSON.stringify(second.body)).to.match(/TOO_MANY_PUSH_CONFIGS|push.maxConfigsPerTask/)
    const list = await rpc(served2.server.url, { jsonrpc: '2.0', id: 3, method: 'ListTaskPushNotificationConfigs', params: { taskId: task.id } },
      { 'A2A-Version': '1.0', ...bearer(served2.server.token) })
    expect(list.body.result.configs, JSON.stringify(list.body)).to.have.length(1)
  })
})
