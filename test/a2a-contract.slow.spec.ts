// Issue 45 item 1, the A2A 0.3 contract: every message serve-a2a sends and accepts (under the 0.3
// SDK's own client) and every request provider-a2a sends and answer it accepts (against a server
// built from the 0.3 SDK's server classes) validates against JSON Schemas derived at test time from
// the 0.3 SDK's types, which that SDK generated from the published a2a.json (test/support/a2a-schema.ts).
// The traffic is the real wire: a recording proxy on 127.0.0.1 sits between client and server
// (test/support/http-recorder.ts). A2A 1.0 traffic is recognised and counted, not checked: the 1.x
// SDK's types describe its objects in memory, not its wire (serve-a2a's README, "Protocol contract").
import { randomUUID } from 'node:crypto'
import { expect } from 'chai'
import { bearer, client03, type Served } from '../packages/serve-a2a/tests/helpers.js'
import { startScriptedServerV03 } from '../packages/provider-a2a/tests/fixtures/scripted-server-v03.js'
import { until } from '../packages/provider-a2a/tests/helpers.js'
import { A2aContractV03, deriveSchemasV03, KNOWN_DIFFERENCES } from './support/a2a-schema.js'
import { type Exchange, type Recorder, startRecorder } from './support/http-recorder.js'
import { driveEveryOutcome, serveRecorded, type Webhook } from './support/a2a-traffic.js'

const message = (text: string, extra: Record<string, unknown> = {}) =>
  ({ message: { kind: 'message' as const, role: 'user' as const, messageId: randomUUID(), parts: [{ kind: 'text' as const, text }], ...extra } })

describe('A2A 0.3 contract: our messages validate against schemas derived from the 0.3 SDK\'s types (a2a.json)', function () {
  this.timeout(120_000)
  let contract: A2aContractV03
  const closers: Array<() => Promise<unknown>> = []

  before(async () => {
    contract = new A2aContractV03(await deriveSchemasV03())
  })
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  it('derives from the SDK\'s json-schema-to-typescript output, and refuses what the schema refuses', () => {
    expect(contract.derived.sdkVersion).to.match(/^0\.3\./)
    expect(contract.derived.source).to.match(/a2a-sdk-v03[/\\]dist[/\\].+\.d\.ts$/)
    const post = (body: object, answer: object | string, contentType = 'application/json'): Exchange => ({
      method: 'POST', path: '/a2a/jsonrpc', requestHeaders: {}, requestBody: JSON.stringify(body), status: 200, contentType,
      responseBody: typeof answer === 'string' ? answer : JSON.stringify(answer),
    })
    const task = { kind: 'task', id: 't', contextId: 'c', status: { state: 'completed' } }
    const good = post({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 't' } }, { jsonrpc: '2.0', id: 1, result: task })
    expect(contract.check([good]).problems).to.deep.equal([])
    const { problems } = contract.check([
      // A part of an unknown kind; a state 0.3 lacks; an unknown method; a stream event with a field the types lack;
      // an error whose code is a string; a card without a name.
      post({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: 'm', parts: [{ kind: 'txt', text: 'x' }] } } }, { jsonrpc: '2.0', id: 1, result: task }),
      post({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: 't' } }, { jsonrpc: '2.0', id: 2, result: { ...task, status: { state: 'TASK_STATE_COMPLETED' } } }),
      post({ jsonrpc: '2.0', id: 3, method: 'tasks/list', params: {} }, { jsonrpc: '2.0', id: 3, result: [] }),
      post({ jsonrpc: '2.0', id: 4, method: 'message/stream', params: message('x') }, `data: ${JSON.stringify({ jsonrpc: '2.0', id: 4, result: { ...task, extra: 1 } })}\n\n`, 'text/event-stream'),
      post({ jsonrpc: '2.0', id: 5, method: 'tasks/get', params: { id: 't' } }, { jsonrpc: '2.0', id: 5, error: { code: 'NOT_FOUND', message: 'no' } }),
      { method: 'GET', path: '/.well-known/agent-card.json', requestHeaders: {}, requestBody: '', status: 200, contentType: 'application/json', responseBody: '{"url":"http://x"}' },
    ])
    expect(problems.map((problem) => problem.split(':')[0])).to.deep.equal(['#0 POST /a2a/jsonrpc', '#1 POST /a2a/jsonrpc', '#2 POST /a2a/jsonrpc', '#3 POST /a2a/jsonrpc', '#4 POST /a2a/jsonrpc', '#5 GET /.well-known/agent-card.json'])
    expect(problems[0]).to.include('SendMessageRequest refuses it')
    expect(problems[2]).to.include('not a JSON-RPC request of a known A2A method')
    expect(problems[3]).to.include('must NOT have additional properties')
    expect(problems[5]).to.include('AgentCard refuses it')
    // Each known difference is one property of one type, with its reason.
    for (const difference of KNOWN_DIFFERENCES) expect(difference.why.length).to.be.greaterThan(40)
  })

  describe('serve-a2a under the 0.3 SDK\'s A2AClient', () => {
    let served: Served
    let recorder: Recorder
    let hook: Webhook

    beforeEach(async () => {
      ({ served, recorder, hook } = await serveRecorded(closers))
    })

    it('card, message/send, message/stream, tasks/get, a question answered, tasks/cancel, tasks/resubscribe, push config, push bodies, errors', async () => {
      const client = await client03(recorder.url, bearer(served.server.token))
      type Task03 = { id: string; contextId: string; status: { state: string } }
      const result = <T>(answer: unknown): T => {
        if ((answer as { error?: unknown }).error) throw new Error(JSON.stringify(answer))
        return (answer as { result: T }).result
      }
      // Blocking with a tool call, then non-blocking polled to its end.
      expect(result<Task03>(await client.sendMessage({ ...message('tool then answer'), configuration: { blocking: true } })).status.state).to.equal('completed')
      const polled = result<Task03>(await client.sendMessage({ ...message('polled'), configuration: { blocking: false } }))
      await until(async () => result<Task03>(await client.getTask({ id: polled.id, historyLength: 1 })).status.state === 'completed', 'the polled task completed')
      // Streamed.
      const kinds: string[] = []
      for await (const event of client.sendMessageStream(message('tool streamed'))) kinds.push(event.kind)
      expect(kinds).to.include.members(['task', 'status-update', 'artifact-update'])
      // A question, then its answer on the same task.
      const asked = result<Task03>(await client.sendMessage({ ...message('ask me'), configuration: { blocking: true } }))
      expect(asked.status.state).to.equal('input-required')
      const answered = result<Task03>(await client.sendMessage({ ...message('notes.txt', { taskId: asked.id, contextId: asked.contextId }), configuration: { blocking: true } }))
      expect(answered.status.state).to.equal('completed')
      // A running task: resubscribed, then cancelled.
      const running = result<Task03>(await client.sendMessage({ ...message('forever'), configuration: { blocking: false } }))
      const follow = client.resubscribeTask({ id: running.id })
      expect((await follow.next()).done).to.equal(false)
      expect(result<Task03>(await client.cancelTask({ id: running.id })).status.state).to.equal('canceled')
      for await (const event of { [Symbol.asyncIterator]: () => follow }) void event
      // Push: a webhook given with the message, then the config methods on a task.
      const pushed = result<Task03>(await client.sendMessage({ ...message('pushed'), configuration: { blocking: true, pushNotificationConfig: { url: hook.url, token: 'hook-token' } } }))
      await served.server.pushIdle()
      expect(hook.bodies.length).to.be.greaterThan(0)
      const config = { url: hook.url, id: 'second', token: 'other' }
      result(await client.setTaskPushNotificationConfig({ taskId: pushed.id, pushNotificationConfig: config }))
      // The 0.3 client types this call's params as TaskIdParams; the wire's GetTaskPushNotificationConfigParams also names the config.
      result(await client.getTaskPushNotificationConfig({ id: pushed.id, pushNotificationConfigId: 'second' } as { id: string }))
      result(await client.listTaskPushNotificationConfig({ id: pushed.id }))
      result(await client.deleteTaskPushNotificationConfig({ id: pushed.id, pushNotificationConfigId: 'second' }))
      // Errors: unknown task, a finished task cancelled, the extended card (not offered), no credential.
      expect(await client.getTask({ id: 'no-such-task' })).to.have.nested.property('error.code', -32001)
      expect(await client.cancelTask({ id: pushed.id })).to.have.nested.property('error.code', -32002)
      await client.callExtensionMethod('agent/getAuthenticatedExtendedCard', undefined).catch(() => {})
      const stranger = await client03(recorder.url, {})
      await stranger.getTask({ id: pushed.id }).catch(() => {})
      // Broken on purpose (only the answers are checked): not JSON, params not an object, an unknown method.
      const probe = (body: string) => fetch(`${recorder.url}/a2a/jsonrpc`, { method: 'POST', body, headers: { 'Content-Type': 'application/json', 'x-contract-probe': '1', ...bearer(served.server.token) } })
      for (const body of ['{"jsonrpc":"2.0",', '{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":"t"}', '{"jsonrpc":"2.0","id":8,"method":"tasks/nothing","params":{}}']) await (await probe(body)).text()

      const { problems, methods, seen } = contract.check(recorder.exchanges)
      expect(problems.join('\n')).to.equal('')
      expect([...methods].sort()).to.deep.equal(Object.keys({
        'agent/getAuthenticatedExtendedCard': 1, 'message/send': 1, 'message/stream': 1, 'tasks/cancel': 1, 'tasks/get': 1,
        'tasks/pushNotificationConfig/delete': 1, 'tasks/pushNotificationConfig/get': 1, 'tasks/pushNotificationConfig/list': 1,
        'tasks/pushNotificationConfig/set': 1, 'tasks/resubscribe': 1,
      }))
      expect([...seen]).to.include.members(['card 0.3', 'probe'])
      // The statuses that reached the client: 401 for the stranger, 200 JSON-RPC errors for the rest.
      expect(recorder.exchanges.map((exchange) => exchange.status)).to.include(401)
      // What the webhook got: each body a 0.3 Task (what a 0.3 push notification carries), with the client's token.
      for (const body of hook.bodies) {
        expect(contract.validate('Task', JSON.parse(body.text))).to.equal(undefined)
        expect(body.headers['x-a2a-notification-token']).to.equal('hook-token')
      }
    })
  })

  for (const streaming of [true, false]) {
    it(`provider-a2a against the 0.3 SDK's server classes (${streaming ? 'message/stream' : 'message/send + tasks/get polls'}): completed, a message, failed, a question answered, cancelled`, async () => {
      const server = await startScriptedServerV03({ streaming })
      closers.push(() => server.close())
      const recorder = await startRecorder(server.url)
      closers.push(() => recorder.close())
      await driveEveryOutcome(recorder.url, server)

      const { problems, methods, seen } = contract.check(recorder.exchanges)
      expect(problems.join('\n')).to.equal('')
      expect([...seen]).to.include('card 0.3')
      expect([...methods].sort()).to.deep.equal(streaming ? ['message/stream', 'tasks/cancel'] : ['message/send', 'tasks/cancel', 'tasks/get'])
    })
  }
})
