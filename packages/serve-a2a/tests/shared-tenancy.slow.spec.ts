// Two serve-a2a hosts on one PostgreSQL store: a task is filed under a keyed hash of the credential
// that started it, so a token reaches its tasks through any host that accepts it, and no other token
// does, whatever the hosts' lists (different tokens, generated tokens, another order). And a request
// the store could never keep (a NUL character, an oversized tenant) is refused before any model call.
import { randomUUID } from 'node:crypto'
import { expect } from 'chai'
import { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import type { Config } from '../src/index.js'
import { bearer, rpc, serve, type Served } from './helpers.js'
import { dropSchema, freshSchema, PG_URL, withPg } from './shared-support.js'

const ALICE = 'alice-token-0123456789abcdef'
const BOB = 'bob-token-0123456789abcdef'

/** Asks a question on the first turn (the task waits: it can be read, followed, answered and canceled). */
const asking = (request: GenerateRequest) => request.messages.some((message) => message.role === 'tool')
  ? ScriptedModel.text('painted')
  : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] }

function call(url: string, token: string, method: string, params: Record<string, unknown>) {
  return rpc(url, { jsonrpc: '2.0', id: 1, method, params }, { 'A2A-Version': '1.0', ...bearer(token) })
}

function send(url: string, token: string, text: string, extra: Record<string, unknown> = {}) {
  return call(url, token, 'SendMessage', { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] }, ...extra })
}

describe('serve-a2a shared: tasks are scoped by the credential itself, across hosts (PostgreSQL)', function () {
  this.timeout(60_000)
  let schema: string
  const hosts: Served[] = []

  async function host(name: string, config: Partial<Config>): Promise<Served> {
    const shared = { url: PG_URL, schema, hostName: name, leaseMs: 5000 }
    const served = await serve({ askParent: true, ...config, shared: shared as never }, asking)
    hosts.push(served)
    return served
  }

  beforeEach(async () => {
    schema = freshSchema()
    await withPg(async () => {})
  })

  afterEach(async () => {
    for (const served of hosts.splice(0)) await served.ctx.stop()
    await dropSchema(schema)
  })

  /** Alice's waiting task, started on `a`, as seen (or not) by `token` through `b`. */
  async function probe(a: Served, alice: string, b: Served, token: string) {
    const task = (await send(a.server.url, alice, 'alice\'s private prompt')).body.result.task
    expect(task.status.state).to.equal('TASK_STATE_INPUT_REQUIRED')
    const got = await call(b.server.url, token, 'GetTask', { id: task.id })
    const listed = await call(b.server.url, token, 'ListTasks', {})
    return { task, got: got.body, listed: listed.body.result?.tasks ?? [] }
  }

  async function expectSealed(a: Served, alice: string, b: Served, bob: string) {
    const { task, got, listed } = await probe(a, alice, b, bob)
    expect(got.error?.message, JSON.stringify(got)).to.match(/not found/i)
    expect(JSON.stringify(listed)).to.not.include('alice\'s private prompt')
    const canceled = await call(b.server.url, bob, 'CancelTask', { id: task.id })
    expect(canceled.body.error?.message, JSON.stringify(canceled.body)).to.match(/not found/i)
    const answered = await call(b.server.url, bob, 'SendMessage', {
      message: { messageId: randomUUID(), taskId: task.id, contextId: task.contextId, role: 'ROLE_USER', parts: [{ text: 'bob answers' }] },
    })
    expect(answered.body.error?.message, JSON.stringify(answered.body)).to.match(/not found/i)
    // Alice's task is untouched: still waiting, through her own host.
    expect((await call(a.server.url, alice, 'GetTask', { id: task.id })).body.result.status.state).to.equal('TASK_STATE_INPUT_REQUIRED')
    return task
  }

  it('hosts with different tokens: bob on host B neither reads, lists nor cancels alice\'s task of host A', async () => {
    const a = await host('host-a', { tokens: [ALICE] })
    const b = await host('host-b', { tokens: [BOB] })
    await expectSealed(a, ALICE, b, BOB)
  })

  it('hosts with generated tokens (the default): each host\'s token reaches only its own tasks', async () => {
    const a = await host('host-a', {})
    const b = await host('host-b', {})
    expect(a.server.token).to.be.a('string').and.not.equal(b.server.token)
    await expectSealed(a, a.server.token!, b, b.server.token!)
  })

  it('the same tokens in another order: a token reaches its task through every host, and only its own', async () => {
    const a = await host('host-a', { tokens: [ALICE, BOB] })
    const b = await host('host-b', { tokens: [BOB, ALICE] })
    const { task, got } = await probe(a, ALICE, b, ALICE)
    expect(got.result?.id, JSON.stringify(got)).to.equal(task.id)
    expect((await call(b.server.url, BOB, 'GetTask', { id: task.id })).body.error?.message).to.match(/not found/i)
    // The scope in the store is a keyed hash: neither the token nor its list position.
    const scopes = await withPg((sql) => sql.unsafe(`SELECT DISTINCT scope FROM "${schema}".a2a_tasks`))
    expect(scopes.map((row) => row.scope as string)).to.have.length(1)
    expect(scopes[0].scope).to.match(/^cred-[0-9a-f]{32}$/)
    const answered = await call(b.server.url, ALICE, 'SendMessage', {
      message: { messageId: randomUUID(), taskId: task.id, contextId: task.contextId, role: 'ROLE_USER', parts: [{ text: 'red' }] },
    })
    expect(answered.body.result?.task?.status?.state, JSON.stringify(answered.body)).to.equal('TASK_STATE_COMPLETED')
  })

  it('a NUL character, a lone surrogate or an oversized tenant is refused before the run (no model call, nothing stored, no driver text)', async () => {
    const a = await host('host-a', { tokens: [ALICE] })
    const hostile = [
      { why: /NUL/, params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello\u0000world' }] } } },
      { why: /NUL/, params: { tenant: 'acme\u0000', message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] } } },
      { why: /NUL/, params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }], metadata: { 'k\u0000': 1 } } } },
      { why: /message holds a lone surrogate/, params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi \ud800' }] } } },
      { why: /message holds a lone surrogate/, params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }], metadata: { 'k\udc00': 1 } } } },
      { why: /tenant is longer than 256 bytes/, params: { tenant: 't'.repeat(9000), message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] } } },
    ]
    for (const { why, params } of hostile) {
      const reply = await call(a.server.url, ALICE, 'SendMessage', params)
      expect(reply.status, JSON.stringify(reply.body)).to.equal(400)
      expect(reply.body.error.code).to.equal(-32602)
      expect(reply.body.error.message).to.match(why).and.not.match(/postgres|unsupported unicode|invalid byte sequence|payload string too long/i)
      const read = await call(a.server.url, ALICE, 'GetTask', { id: randomUUID(), ...'tenant' in params ? { tenant: params.tenant } : {} })
      if ('tenant' in params) expect(read.status).to.equal(400)
    }
    // A page of tasks with a history length that is no whole number: refused the same way, not a database error.
    for (const historyLength of [1.5, 'x', -1]) {
      const listed = await call(a.server.url, ALICE, 'ListTasks', { historyLength })
      expect(listed.status, JSON.stringify(listed.body)).to.equal(400)
      expect(listed.body.error.message).to.match(/historyLength must be a whole number/)
    }
    expect(a.model.callCount).to.equal(0)
    const rows = await withPg((sql) => sql.unsafe(`SELECT count(*)::int AS n FROM "${schema}".a2a_tasks`))
    expect(rows[0].n).to.equal(0)
    // A tenant at the bound works end to end on the shared store (stored, notified, read back).
    const tenant = 'é'.repeat(128)
    const task = (await send(a.server.url, ALICE, 'a long tenant', { tenant })).body.result?.task
    expect(task?.status?.state).to.equal('TASK_STATE_INPUT_REQUIRED')
    expect((await call(a.server.url, ALICE, 'GetTask', { id: task.id, tenant })).body.result?.id).to.equal(task.id)
  })
})
