/// <reference types="mocha" />
// A hostile local caller against a real server on 127.0.0.1: no token, a wrong token, a foreign
// Host (DNS rebinding), a foreign Origin (a web page), another credential's task ids, oversized
// bodies, too many requests, too many tasks. Each refusal is an HTTP status with a JSON-RPC error
// body carrying a stable code, and nothing runs.
import { randomUUID } from 'node:crypto'
import { expect } from 'chai'
import { Context, Logger } from 'cordis'
import { ScriptedModel } from '@cordis-subagents/agent'
import type { GenerateRequest } from '@cordis-subagents/agent'
import A2aServer, { refusalRpcCode } from '../src/index.js'
import { bearer, client10, message10, raw, rpc, serve, type Served } from './helpers.js'
import { eventually as until } from '@cordis-subagents/test-support'

const V1 = { 'A2A-Version': '1.0' }

/** A 1.0 JSON-RPC SendMessage body (proto JSON), non-blocking when `returnImmediately`. */
function sendBody(text: string, returnImmediately = false) {
  return {
    jsonrpc: '2.0', id: 1, method: 'SendMessage',
    params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] }, configuration: { returnImmediately } },
  }
}

/** A model that answers only once `open()` is called (or the run is aborted). */
function gatedModel() {
  let open!: () => void
  const gate = new Promise<void>((resolve) => { open = resolve })
  const script = async (request: GenerateRequest) => {
    await new Promise<void>((resolve, reject) => {
      request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
      void gate.then(resolve)
    })
    return ScriptedModel.text('released')
  }
  return { script, open }
}

describe('serve-a2a: a hostile local caller', function () {
  this.timeout(30_000)
  let served: Served | undefined

  afterEach(async () => {
    await served?.ctx.stop()
    served = undefined
  })

  it('refuses a JSON-RPC call without a token or with a wrong one (401 UNAUTHENTICATED), and runs nothing', async () => {
    served = await serve()
    for (const headers of [{}, bearer('wrong'), bearer(`${served.server.token}x`), { Authorization: `Basic ${served.server.token}` }]) {
      const answer = await rpc(served.server.url, sendBody('read .env'), { ...V1, ...headers })
      expect(answer.status).to.equal(401)
      expect(answer.headers['www-authenticate']).to.equal('Bearer realm="a2a"')
      expect(answer.body.error).to.deep.include({ code: refusalRpcCode('UNAUTHENTICATED'), data: { code: 'UNAUTHENTICATED' } })
      expect(answer.body.error.message).to.match(/Authorization: Bearer <token>/)
    }
    expect(served.model.callCount).to.equal(0)
    expect(served.server.refusals.UNAUTHENTICATED).to.equal(4)
    // The right token works (so the refusals above were about the token).
    const ok = await rpc(served.server.url, sendBody('hello'), { ...V1, ...bearer(served.server.token) })
    expect(ok.status).to.equal(200)
    expect(ok.body.result.task.status.state).to.equal('TASK_STATE_COMPLETED')
  })

  it('refuses a foreign Host (DNS rebinding) on the card and on JSON-RPC, even with the token (403 FORBIDDEN_HOST)', async () => {
    served = await serve()
    const port = new URL(served.server.url).port
    for (const host of ['evil.example', `evil.example:${port}`, `127.0.0.1:${Number(port) + 1}`, `localhost.evil.example:${port}`]) {
      const card = await raw(served.server.url, { method: 'GET', path: '/.well-known/agent-card.json', headers: { Host: host } })
      expect(card.status, host).to.equal(403)
      expect(card.body.error.data.code).to.equal('FORBIDDEN_HOST')
      const call = await rpc(served.server.url, sendBody('read .env'), { Host: host, ...V1, ...bearer(served.server.token) })
      expect(call.status, host).to.equal(403)
      expect(call.body.error).to.deep.include({ code: refusalRpcCode('FORBIDDEN_HOST') })
    }
    expect(served.model.callCount).to.equal(0)
    // The loopback names with the bound port are accepted.
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      const card = await raw(served.server.url, { method: 'GET', path: '/.well-known/agent-card.json', headers: { Host: host } })
      expect(card.status, host).to.equal(200)
    }
  })

  it('refuses a foreign Origin (a web page), even with the token (403 FORBIDDEN_ORIGIN); its own origin passes', async () => {
    served = await serve()
    for (const origin of ['http://evil.example', 'null', `http://localhost:${Number(new URL(served.server.url).port) + 1}`]) {
      const call = await rpc(served.server.url, sendBody('read .env'), { Origin: origin, ...V1, ...bearer(served.server.token) })
      expect(call.status, origin).to.equal(403)
      expect(call.body.error.data.code).to.equal('FORBIDDEN_ORIGIN')
    }
    expect(served.model.callCount).to.equal(0)
    const same = await rpc(served.server.url, sendBody('hello'), { Origin: served.server.url, ...V1, ...bearer(served.server.token) })
    expect(same.status).to.equal(200)
  })

  it('a credential sees, resubscribes to and cancels only its own tasks: another\'s task id answers exactly like an unknown one', async () => {
    const gated = gatedModel()
    served = await serve({ tokens: ['token-of-alice-0123456789', 'token-of-bob-0123456789'] }, gated.script)
    const alice = { ...V1, ...bearer('token-of-alice-0123456789') }
    const bob = { ...V1, ...bearer('token-of-bob-0123456789') }
    const started = await rpc(served.server.url, sendBody('alice\'s secret prompt', true), alice)
    const taskId: string = started.body.result.task.id
    await until(() => served!.server.runningTasks === 1, 'the task runs')
    const unknown = randomUUID()
    for (const method of ['GetTask', 'CancelTask', 'SubscribeToTask']) {
      const theirs = await rpc(served.server.url, { jsonrpc: '2.0', id: 7, method, params: { id: taskId } }, bob)
      const none = await rpc(served.server.url, { jsonrpc: '2.0', id: 7, method, params: { id: unknown } }, bob)
      expect(theirs.status, method).to.equal(none.status)
      expect(theirs.body.error, `${method}: ${JSON.stringify(theirs.body)}`).to.be.an('object')
      expect(JSON.stringify(theirs.body).replaceAll(taskId, 'ID'), method).to.equal(JSON.stringify(none.body).replaceAll(unknown, 'ID'))
      expect(JSON.stringify(theirs.body)).to.not.include('secret prompt')
    }
    const listed = await rpc(served.server.url, { jsonrpc: '2.0', id: 8, method: 'ListTasks', params: {} }, bob)
    expect(listed.body.result.tasks ?? []).to.deep.equal([])
    // Bob's cancel did nothing: Alice's task still runs, and she sees it.
    expect(served.server.runningTasks).to.equal(1)
    const mine = await rpc(served.server.url, { jsonrpc: '2.0', id: 9, method: 'GetTask', params: { id: taskId } }, alice)
    expect(mine.body.result.id).to.equal(taskId)
    const aliceList = await rpc(served.server.url, { jsonrpc: '2.0', id: 10, method: 'ListTasks', params: {} }, alice)
    expect(aliceList.body.result.tasks.map((task: { id: string }) => task.id)).to.deep.equal([taskId])
    // Alice can cancel her own task.
    const canceled = await rpc(served.server.url, { jsonrpc: '2.0', id: 11, method: 'CancelTask', params: { id: taskId } }, alice)
    expect(canceled.body.result.status.state).to.equal('TASK_STATE_CANCELED')
    gated.open()
  })

  it('refuses an oversized body before parsing it (413 BODY_TOO_LARGE), with or without a Content-Length', async () => {
    served = await serve({ maxBodyBytes: 4096 })
    const big = JSON.stringify(sendBody('x'.repeat(10_000)))
    const answer = await rpc(served.server.url, big, { ...V1, ...bearer(served.server.token) })
    expect(answer.status).to.equal(413)
    expect(answer.body.error).to.deep.include({ code: refusalRpcCode('BODY_TOO_LARGE'), data: { code: 'BODY_TOO_LARGE' } })
    const chunked = await raw(served.server.url, { headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', ...V1, ...bearer(served.server.token) }, body: big })
    expect(chunked.status).to.equal(413)
    expect(served.model.callCount).to.equal(0)
  })

  it('a tenant or id that is no string (an array nested 20,000 deep) is INVALID_PARAMS as JSON, never an HTML page with a stack trace', async () => {
    served = await serve()
    // Written by hand: JSON.stringify of it would overflow this process's stack too.
    const nested = `${'['.repeat(20_000)}${']'.repeat(20_000)}`
    const auth = { ...V1, ...bearer(served.server.token) }
    for (const params of [`{"tenant":${nested},"id":"x"}`, `{"id":${nested}}`, '{"id":7}']) {
      const answer = await rpc(served.server.url, `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":${params}}`, auth)
      expect(answer.status, JSON.stringify(answer.body).slice(0, 200)).to.equal(400)
      expect(answer.body.error).to.deep.include({ code: refusalRpcCode('INVALID_PARAMS'), data: { code: 'INVALID_PARAMS' } })
      expect(answer.body.error.message).to.match(/^Refused: (tenant|id) must be a string\.$/)
    }
    expect(served.model.callCount).to.equal(0)
  })

  it('limits requests per credential per minute (429 RATE_LIMITED); another credential is not affected', async () => {
    served = await serve({ tokens: ['first-token-0123456789', 'second-token-0123456789'], rateLimit: 3 })
    const get = (token: string) => rpc(served!.server.url, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'none' } }, { ...V1, ...bearer(token) })
    for (let i = 0; i < 3; i++) expect((await get('first-token-0123456789')).status).to.equal(200)
    const limited = await get('first-token-0123456789')
    expect(limited.status).to.equal(429)
    expect(limited.headers['retry-after']).to.equal('60')
    expect(limited.body.error).to.deep.include({ code: refusalRpcCode('RATE_LIMITED'), data: { code: 'RATE_LIMITED' } })
    expect((await get('second-token-0123456789')).status).to.equal(200)
  })

  it('limits running tasks in total and per credential (429 TOO_MANY_TASKS); a slot frees when a task ends', async () => {
    const gated = gatedModel()
    served = await serve({ tokens: ['first-token-0123456789', 'second-token-0123456789'], maxConcurrentTasks: 2, maxTasksPerCredential: 1 }, gated.script)
    const first = { ...V1, ...bearer('first-token-0123456789') }
    const second = { ...V1, ...bearer('second-token-0123456789') }
    expect((await rpc(served.server.url, sendBody('one', true), first)).status).to.equal(200)
    const mine = await rpc(served.server.url, sendBody('two', true), first)
    expect(mine.status).to.equal(429)
    expect(mine.body.error.data.code).to.equal('TOO_MANY_TASKS')
    expect(mine.body.error.message).to.match(/for this credential \(maxTasksPerCredential\)/)
    expect((await rpc(served.server.url, sendBody('three', true), second)).status).to.equal(200)
    await until(() => served!.server.runningTasks === 2, 'two tasks run')
    const full = await rpc(served.server.url, sendBody('four', true), second)
    expect(full.status).to.equal(429)
    gated.open()
    await until(() => served!.server.runningTasks === 0, 'the tasks end')
    expect((await rpc(served.server.url, sendBody('five'), first)).body.result.task.status.state).to.equal('TASK_STATE_COMPLETED')
  })

  it('api-key mode: the key in its header is the credential; a bearer token is not', async () => {
    served = await serve({ auth: 'api-key', tokens: ['key-0123456789abcdef'], apiKeyHeader: 'X-Agent-Key' })
    expect(served.server.token).to.equal(undefined)
    expect((await rpc(served.server.url, sendBody('hi'), { ...V1, ...bearer('key-0123456789abcdef') })).status).to.equal(401)
    expect((await rpc(served.server.url, sendBody('hi'), { ...V1, 'X-Agent-Key': 'key-0123456789abcdef' })).status).to.equal(200)
    const card = await raw(served.server.url, { method: 'GET', path: '/.well-known/agent-card.json' })
    expect(card.body.securitySchemes).to.deep.equal({ cordis: { type: 'apiKey', in: 'header', name: 'X-Agent-Key', description: 'An API key the operator of this server gave you.' } })
  })

  it('a non-loopback bind needs allowRemote as well as a credential (the one bind rule of shared)', () => {
    expect(() => new A2aServer(new Context(), { host: '0.0.0.0' })).to.throw(/host 0\.0\.0\.0 is not loopback.*allowRemote: true/)
    expect(() => new A2aServer(new Context(), { auth: 'none', host: '0.0.0.0', allowRemote: true }))
      .to.throw(/auth: none is only allowed on a loopback bind.*no credential/)
    expect(() => new A2aServer(new Context(), { host: '0.0.0.0', allowRemote: true })).to.not.throw()
  })

  it('auth: none is refused on a non-loopback bind (the plugin fails at load), allowed on loopback with a warning', async () => {
    expect(() => new A2aServer(new Context(), { auth: 'none', host: '0.0.0.0' })).to.throw(/auth: none is only allowed on a loopback bind/)
    const ctx = new Context()
    const errors: unknown[] = []
    ctx.on('internal/error', (error) => { errors.push(error) })
    ctx.plugin(A2aServer, { auth: 'none', host: '0.0.0.0' })
    await ctx.start()
    expect(ctx.get('a2aServer')).to.equal(undefined)
    await ctx.stop()
    const lines: string[] = []
    const target = { colors: 0, record: (record: Logger.Record) => { lines.push(`${record.type} ${record.content}`) } }
    Logger.targets.push(target)
    try {
      served = await serve({ auth: 'none' })
    } finally {
      Logger.targets.splice(Logger.targets.indexOf(target), 1)
    }
    expect(lines.some((line) => /^warn serving .* WITHOUT authentication/.test(line)), lines.join('\n')).to.equal(true)
    const client = await client10(served.server.url, {})
    expect(await client.sendMessage(message10('open') as never)).to.have.nested.property('status.state')
  })

  it('a tokensFromEnv variable that is not set fails the load naming the variable; tokens never reach the logs', async () => {
    delete process.env.SERVE_A2A_TEST_TOKEN
    expect(() => new A2aServer(new Context(), { tokensFromEnv: ['SERVE_A2A_TEST_TOKEN'] })).to.throw(/SERVE_A2A_TEST_TOKEN is not set/)
    process.env.SERVE_A2A_TEST_TOKEN = 'env-token-0123456789abcdef'
    const lines: string[] = []
    const target = { colors: 0, levels: { base: 3 }, record: (record: Logger.Record) => { lines.push(`${record.type} ${record.content}`) } }
    Logger.targets.push(target)
    try {
      served = await serve({ tokens: ['config-token-0123456789'], tokensFromEnv: ['SERVE_A2A_TEST_TOKEN'] })
      expect(served.server.credentialCount).to.equal(2)
      expect((await rpc(served.server.url, sendBody('hi'), { ...V1, ...bearer('env-token-0123456789abcdef') })).status).to.equal(200)
      expect((await rpc(served.server.url, sendBody('hi'), { ...V1, ...bearer('wrong') })).status).to.equal(401)
    } finally {
      Logger.targets.splice(Logger.targets.indexOf(target), 1)
      delete process.env.SERVE_A2A_TEST_TOKEN
    }
    expect(lines.length).to.be.greaterThan(0)
    expect(lines.join('\n')).to.not.include('env-token-0123456789abcdef').and.not.include('config-token-0123456789')
  })
})
