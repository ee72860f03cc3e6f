/// <reference types="mocha" />
// Both A2A versions against one server: the @a2a-js/sdk 1.x client (A2A 1.0) and the 0.3 SDK's
// A2AClient (installed as a2a-sdk-v03) each read the card and complete a task; the card each one
// is served has its version's shape and advertises the security scheme.
import { expect } from 'chai'
import { TaskState } from '@a2a-js/sdk'
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client'
import { ScriptedModel } from '@cordis-subagents/agent'
import { bearer, client03, client10, drain, message10, raw, serve, type Served } from './helpers.js'

describe('serve-a2a: A2A 1.0 and 0.3 clients', function () {
  this.timeout(20_000)
  let served: Served

  beforeEach(async () => {
    served = await serve({ name: 'test agent', description: 'answers' }, (request) => ScriptedModel.text(`answer to: ${String(request.messages.at(-1)?.content)}`))
  })
  afterEach(() => served.ctx.stop())

  it('the @a2a-js/sdk 1.x client completes a streamed task and reads the answer artifact', async () => {
    const client = await client10(served.server.url, bearer(served.server.token))
    const events = await drain(client.sendMessageStream(message10('hello') as never))
    const final = events.at(-1)!
    expect(final.payload?.$case).to.equal('statusUpdate')
    const status = (final.payload as { value: { status: { state: TaskState } } }).value.status
    expect(status.state).to.equal(TaskState.TASK_STATE_COMPLETED)
    const artifact = events.find((event) => event.payload?.$case === 'artifactUpdate')
    const part = (artifact!.payload as { value: { artifact: { parts: Array<{ content: { value: string } }> } } }).value.artifact.parts[0]
    expect(part.content.value).to.equal('answer to: hello')
  })

  it('the @a2a-js/sdk 1.x client completes a blocking SendMessage', async () => {
    const client = await client10(served.server.url, bearer(served.server.token))
    const result = await client.sendMessage(message10('blocking') as never)
    const task = result as unknown as { status: { state: TaskState }; artifacts: Array<{ parts: Array<{ content: { value: string } }> }> }
    expect(task.status.state).to.equal(TaskState.TASK_STATE_COMPLETED)
    expect(task.artifacts[0].parts[0].content.value).to.equal('answer to: blocking')
  })

  it('the 0.3 SDK\'s A2AClient reads the 0.3 card and completes a task (message/send and message/stream)', async () => {
    const client = await client03(served.server.url, bearer(served.server.token))
    const answer = await client.sendMessage({ message: { kind: 'message', role: 'user', messageId: 'm-1', parts: [{ kind: 'text', text: 'from 0.3' }] }, configuration: { blocking: true } })
    expect('error' in answer, JSON.stringify(answer)).to.equal(false)
    type Task03 = { kind: string; status: { state: string }; artifacts?: Array<{ parts: Array<{ kind: string; text?: string }> }> }
    const task = (answer as { result: Task03 }).result
    expect(task.kind).to.equal('task')
    expect(task.status.state).to.equal('completed')
    expect(task.artifacts![0].parts[0]).to.deep.include({ kind: 'text', text: 'answer to: from 0.3' })
    const states: string[] = []
    for await (const event of client.sendMessageStream({ message: { kind: 'message', role: 'user', messageId: 'm-2', parts: [{ kind: 'text', text: 'streamed' }] } })) {
      // The task comes first, announced working (its agent has started), then its updates.
      if (event.kind === 'task' || event.kind === 'status-update') states.push(`${event.kind}: ${event.status.state}`)
    }
    expect(states[0]).to.equal('task: working')
    expect(states.at(-1)).to.equal('status-update: completed')
  })

  it('serves one card per version: 0.3 (no A2A-Version header) with url/protocolVersion/security, 1.0 with supportedInterfaces/securityRequirements', async () => {
    const old = await raw(served.server.url, { method: 'GET', path: '/.well-known/agent-card.json', headers: { Host: new URL(served.server.url).host } })
    expect(old.status).to.equal(200)
    expect(old.body).to.deep.include({ url: `${served.server.url}/a2a/jsonrpc`, protocolVersion: '0.3', preferredTransport: 'JSONRPC', name: 'test agent' })
    expect(old.body.securitySchemes).to.deep.equal({ cordis: { type: 'http', scheme: 'Bearer', description: 'A bearer token the operator of this server gave you.' } })
    expect(old.body.security).to.deep.equal([{ cordis: [] }])
    expect(old.body.capabilities.streaming).to.equal(true)
    const current = await raw(served.server.url, { method: 'GET', path: '/.well-known/agent-card.json', headers: { Host: new URL(served.server.url).host, 'A2A-Version': '1.0' } })
    expect(current.status).to.equal(200)
    expect(current.body.supportedInterfaces.map((entry: { protocolVersion: string; url: string; protocolBinding: string }) => [entry.protocolVersion, entry.protocolBinding, entry.url])).to.deep.equal([['1.0', 'JSONRPC', `${served.server.url}/a2a/jsonrpc`], ['0.3', 'JSONRPC', `${served.server.url}/a2a/jsonrpc`]])
    // Protobuf's JSON form (what A2A 1.0 publishes): a oneof as its member's field, defaults left out.
    expect(current.body.securitySchemes).to.deep.equal({ cordis: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'A bearer token the operator of this server gave you.' } } })
    expect(current.body.securityRequirements).to.deep.equal([{ schemes: { cordis: {} } }])
    expect(JSON.stringify(current.body)).to.not.include('$case')
    // Nothing secret on the public card.
    expect(JSON.stringify([old.body, current.body])).to.not.include(served.server.token!)
  })

  it('the 1.x SDK\'s card resolver reads the 1.0 card\'s security scheme (bearer, and an API key in its header)', async () => {
    const resolved = await new DefaultAgentCardResolver().resolve(served.server.url)
    expect(resolved.securitySchemes.cordis?.scheme).to.deep.equal({
      $case: 'httpAuthSecurityScheme', value: { scheme: 'Bearer', description: 'A bearer token the operator of this server gave you.', bearerFormat: '' },
    })
    expect(resolved.securityRequirements.map((requirement) => Object.keys(requirement.schemes))).to.deep.equal([['cordis']])
    const keyed = await serve({ auth: 'api-key', tokens: ['key-0123456789abcdef'], apiKeyHeader: 'X-Agent-Key' })
    try {
      const card = await new DefaultAgentCardResolver().resolve(keyed.server.url)
      expect(card.securitySchemes.cordis?.scheme).to.deep.equal({
        $case: 'apiKeySecurityScheme', value: { location: 'header', name: 'X-Agent-Key', description: 'An API key the operator of this server gave you.' },
      })
    } finally {
      await keyed.ctx.stop()
    }
  })
})
