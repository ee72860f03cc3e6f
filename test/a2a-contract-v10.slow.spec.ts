// Issue 45 item 1, the A2A 1.0 half: every message serve-a2a sends and accepts (under the 1.x SDK's
// client) and every request provider-a2a sends and answer it accepts (against a server built from the
// 1.x SDK's server classes), captured on the real wire by a recording proxy on 127.0.0.1, decodes with
// the SDK's protobuf-JSON codec of its type and encodes back to the same JSON, with every field
// a2a.proto marks REQUIRED (test/support/a2a-contract-v10.ts).
import { expect } from 'chai'
import { bearer, client10, drain, message10, type Served } from '../packages/serve-a2a/tests/helpers.js'
import { startScriptedServer } from '../packages/provider-a2a/tests/fixtures/scripted-server.js'
import { until } from '../packages/provider-a2a/tests/helpers.js'
import { checkV10, problemsOf } from './support/a2a-contract-v10.js'
import { type Recorder, startRecorder } from './support/http-recorder.js'
import { driveEveryOutcome, serveRecorded, type Webhook } from './support/a2a-traffic.js'

describe('A2A 1.0 contract: our messages round-trip through the 1.x SDK\'s protobuf-JSON codecs (a2a.proto)', function () {
  this.timeout(120_000)
  const closers: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  it('the check refuses what a2a.proto\'s JSON refuses: a wrong enum name, a dropped or in-memory oneof, an unknown field, a missing REQUIRED field', () => {
    const task = { id: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifactId: 'a', parts: [{ text: 'x', mediaType: 'text/plain' }] }] }
    expect(problemsOf('Task', task)).to.deep.equal([])
    const with_ = (change: (copy: any) => void) => {
      const copy = structuredClone(task)
      change(copy)
      return problemsOf('Task', copy).join('\n')
    }
    expect(with_((copy) => copy.status.state = 'TASK_STATE_DONE')).to.include('Task.status.state: "TASK_STATE_DONE" → "UNRECOGNIZED"')
    expect(with_((copy) => copy.status.state = 'completed')).to.include('Task.status.state: "completed"')
    expect(with_((copy) => delete copy.artifacts[0].parts[0].text)).to.include('Task.artifacts[0].parts[0]: no member of its oneof')
    expect(with_((copy) => copy.artifacts[0].parts[0] = { content: { $case: 'text', value: 'x' } })).to.match(/parts\[0\]\.content: .* → \(absent\)/)
    expect(with_((copy) => copy.kind = 'task')).to.include('Task.kind: "task" → (absent)')
    expect(with_((copy) => copy.context_id = copy.contextId)).to.include('Task.context_id: "c" → (absent)')
    expect(with_((copy) => delete copy.artifacts[0].artifactId)).to.include('Task.artifacts[0].artifactId: required by a2a.proto, absent')
    // A default written out: not what toJSON writes (ours are held to it), legal protobuf JSON from a peer; a REQUIRED one always taken.
    expect(with_((copy) => copy.history = [])).to.include('Task.history: [] → (absent) (a default written out)')
    expect(problemsOf('Task', { ...task, history: [] }, true)).to.deep.equal([])
    expect(problemsOf('Task', { ...task, histories: [] }, true).join()).to.include('Task.histories: [] → (absent)')
    expect(problemsOf('ListTasksResponse', { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 })).to.deep.equal([])
    expect(problemsOf('ListTasksResponse', { tasks: [], pageSize: 50, totalSize: 0 })).to.deep.equal(['ListTasksResponse.nextPageToken: required by a2a.proto, absent'])
    // The card as the SDK held it in memory (the bug serve-a2a had): its scheme is an unknown field and no scheme is set.
    const card = { name: 'n', description: 'd', version: '1', supportedInterfaces: [{ url: 'http://h/a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }], capabilities: {}, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [{ id: 's', name: 's', description: 's', tags: ['s'] }] }
    expect(problemsOf('AgentCard', { ...card, securitySchemes: { cordis: { httpAuthSecurityScheme: { scheme: 'Bearer' } } } })).to.deep.equal([])
    expect(problemsOf('AgentCard', { ...card, securitySchemes: { cordis: { scheme: { $case: 'httpAuthSecurityScheme', value: { scheme: 'Bearer' } } } } })).to.deep.equal([
      'AgentCard.securitySchemes.cordis: no member of its oneof (apiKeySecurityScheme, httpAuthSecurityScheme, oauth2SecurityScheme, openIdConnectSecurityScheme, mtlsSecurityScheme) is set',
      'AgentCard.securitySchemes.cordis.scheme: {"$case":"httpAuthSecurityScheme","value":{"scheme":"Bearer"}} → (absent)',
    ])
    // Over exchanges: an envelope with a field JSON-RPC lacks, and a Delete answering something.
    const post = (body: object, answer: object) => ({ method: 'POST', path: '/a2a/jsonrpc', requestHeaders: { 'a2a-version': '1.0' }, requestBody: JSON.stringify(body), status: 200, contentType: 'application/json', responseBody: JSON.stringify(answer) })
    const { problems } = checkV10([
      post({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 't' }, extra: 1 }, { jsonrpc: '2.0', id: 1, result: task }),
      post({ jsonrpc: '2.0', id: 2, method: 'DeleteTaskPushNotificationConfig', params: { taskId: 't', id: 'p' } }, { jsonrpc: '2.0', id: 2, result: task }),
      post({ jsonrpc: '2.0', id: 3, method: 'GetTask', params: { id: 't' } }, { jsonrpc: '2.0', id: 3, error: { code: 'NOT_FOUND', message: 'no' } }),
    ])
    expect(problems).to.have.length(3)
    expect(problems[0]).to.match(/^#0 POST \/a2a\/jsonrpc: not a JSON-RPC 2\.0 request/)
    expect(problems[1]).to.match(/^#1 POST \/a2a\/jsonrpc: the result of DeleteTaskPushNotificationConfig is not empty/)
    expect(problems[2]).to.match(/^#2 POST \/a2a\/jsonrpc: an error without an integer code/)
  })

  describe('serve-a2a under the 1.x SDK\'s client', () => {
    let served: Served
    let recorder: Recorder
    let hook: Webhook

    beforeEach(async () => {
      ({ served, recorder, hook } = await serveRecorded(closers))
    })

    it('card, SendMessage, SendStreamingMessage, GetTask, ListTasks, a question answered, CancelTask, SubscribeToTask, push configs, push bodies, errors', async () => {
      const client = await client10(recorder.url, bearer(served.server.token))
      const send = (text: string, extra: { taskId?: string; contextId?: string; returnImmediately?: boolean; push?: object } = {}) => {
        const params = message10(text)
        Object.assign(params.message, { taskId: extra.taskId ?? '', contextId: extra.contextId ?? '' })
        return client.sendMessage({
          ...params,
          configuration: {
            acceptedOutputModes: [], historyLength: undefined, returnImmediately: extra.returnImmediately ?? false,
            taskPushNotificationConfig: extra.push as never,
          },
        } as never) as Promise<{ id: string; contextId: string; status: { state: number } }>
      }
      expect((await send('tool then answer')).status.state).to.equal(3)
      const polled = await send('polled', { returnImmediately: true })
      await until(async () => (await client.getTask({ tenant: '', id: polled.id, historyLength: 1 })).status?.state === 3, 'the polled task completed')
      await client.listTasks({ tenant: '', contextId: '', status: 0, pageSize: 10, pageToken: '', historyLength: 0, statusTimestampAfter: undefined, includeArtifacts: true })
      await drain(client.sendMessageStream(message10('tool streamed') as never))
      const asked = await send('ask me')
      expect(asked.status.state).to.equal(6)
      expect((await send('notes.txt', { taskId: asked.id, contextId: asked.contextId })).status.state).to.equal(3)
      const running = await send('forever', { returnImmediately: true })
      const follow = client.resubscribeTask({ tenant: '', id: running.id })
      expect((await follow.next()).done).to.equal(false)
      expect((await client.cancelTask({ tenant: '', id: running.id, metadata: undefined })).status?.state).to.equal(5)
      for await (const event of { [Symbol.asyncIterator]: () => follow }) void event
      const pushed = await send('pushed', { push: { tenant: '', id: '', taskId: '', url: hook.url, token: 'hook-token', authentication: undefined } })
      await served.server.pushIdle()
      expect(hook.bodies.length).to.be.greaterThan(0)
      await client.createTaskPushNotificationConfig({ tenant: '', id: 'second', taskId: pushed.id, url: hook.url, token: 'other', authentication: { scheme: 'Bearer', credentials: 'hook-secret' } })
      await client.getTaskPushNotificationConfig({ tenant: '', taskId: pushed.id, id: 'second' })
      await client.listTaskPushNotificationConfig({ tenant: '', taskId: pushed.id, pageSize: 0, pageToken: '' })
      await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: pushed.id, id: 'second' })
      // Errors: an unknown task, a finished task cancelled, the extended card (not offered), no credential.
      await client.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined }).then(() => expect.fail('found'), () => {})
      await client.cancelTask({ tenant: '', id: pushed.id, metadata: undefined }).then(() => expect.fail('cancelled'), () => {})
      const probe = (body: string, headers: Record<string, string> = bearer(served.server.token)) => fetch(`${recorder.url}/a2a/jsonrpc`, {
        method: 'POST', body, headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', 'x-contract-probe': '1', ...headers },
      }).then((answer) => answer.text())
      await probe('{"jsonrpc":"2.0","id":6,"method":"GetExtendedAgentCard","params":{}}')
      await probe('{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"x"}}', {})
      // Broken on purpose (only the answers are checked): not JSON, params not an object, an unknown method.
      for (const body of ['{"jsonrpc":"2.0",', '{"jsonrpc":"2.0","id":8,"method":"GetTask","params":"t"}', '{"jsonrpc":"2.0","id":9,"method":"tasks/nothing","params":{}}']) await probe(body)

      const { problems, methods, seen } = checkV10(recorder.exchanges)
      expect(problems.join('\n')).to.equal('')
      expect([...methods].sort()).to.deep.equal([
        'CancelTask', 'CreateTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfig', 'GetTask', 'GetTaskPushNotificationConfig',
        'ListTaskPushNotificationConfigs', 'ListTasks', 'SendMessage', 'SendStreamingMessage', 'SubscribeToTask',
      ])
      expect([...seen]).to.include.members(['card 1.0', 'probe'])
      for (const body of hook.bodies) {
        expect(problemsOf('StreamResponse', JSON.parse(body.text))).to.deep.equal([])
        expect(body.headers['x-a2a-notification-token']).to.equal('hook-token')
      }
    })
  })

  for (const streaming of [true, false]) {
    it(`provider-a2a against the 1.x SDK's server classes (${streaming ? 'SendStreamingMessage' : 'SendMessage + GetTask polls'}): completed, a message, failed, a question answered, cancelled`, async () => {
      const server = await startScriptedServer({ streaming })
      closers.push(() => server.close())
      const recorder = await startRecorder(server.url)
      closers.push(() => recorder.close())
      await driveEveryOutcome(recorder.url, server)

      // The answers are the SDK server's (it writes its card's defaults out); the requests are ours.
      const { problems, methods, seen } = checkV10(recorder.exchanges, { peerDefaults: true })
      expect(problems.join('\n')).to.equal('')
      expect([...seen]).to.include('card 1.0')
      expect([...methods].sort()).to.deep.equal(streaming ? ['CancelTask', 'SendStreamingMessage'] : ['CancelTask', 'GetTask', 'SendMessage'])
    })
  }
})
