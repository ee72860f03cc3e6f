/// <reference types="mocha" />
// What the server keeps and how it goes: tasks evicted after their TTL and capped in number (3,000
// tasks through a real server keep the store at its cap), running tasks never evicted, and a stop
// that aborts running tasks, closes every connection and frees the port for a reload.
import { connect } from 'node:net'
import { expect } from 'chai'
import { type Task, TaskState } from '@a2a-js/sdk'
import { ServerCallContext } from '@a2a-js/sdk/server'
import { ScriptedModel, type GenerateRequest } from '@cordis-subagents/agent'
import { Context } from 'cordis'
import AgentRuntime from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import { freePort, reloadedWhileStarting, unloadedWhileStarting } from '@cordis-subagents/test-support'
import A2aServer from '../src/index.js'
import { BoundedTaskStore } from '../src/task-store.js'
import { bearer, client10, message10, rpc, serve, type Served } from './helpers.js'

function task(id: string, state = TaskState.TASK_STATE_COMPLETED): Task {
  return { id, contextId: 'c', status: { state, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [], metadata: undefined }
}

const as = (userName: string) => new ServerCallContext({ user: { isAuthenticated: true, userName } })

describe('serve-a2a: bounded task store', () => {
  it('evicts a finished task ttl ms after its last update, never a running one', async () => {
    let now = 0
    const running = new Set<string>()
    const store = new BoundedTaskStore({ max: 10, ttl: 1_000, isRunning: (key) => running.has(key), now: () => now })
    await store.save(task('done'), as('a'))
    await store.save(task('busy', TaskState.TASK_STATE_WORKING), as('a'))
    running.add('\u0000a\u0000busy')
    now = 999
    expect(await store.load('done', as('a'))).to.not.equal(undefined)
    now = 1_000
    expect(await store.load('done', as('a'))).to.equal(undefined)
    expect(await store.load('busy', as('a'))).to.not.equal(undefined)
    expect(store.size).to.equal(1)
  })

  it('past max, the least recently updated task that is not running goes first', async () => {
    const running = new Set<string>(['\u0000a\u0000t0'])
    const store = new BoundedTaskStore({ max: 3, ttl: 60_000, isRunning: (key) => running.has(key) })
    for (let i = 0; i < 6; i++) await store.save(task(`t${i}`), as('a'))
    expect(store.size).to.equal(3)
    expect(await store.load('t0', as('a'))).to.not.equal(undefined)
    expect(await store.load('t4', as('a'))).to.not.equal(undefined)
    expect(await store.load('t5', as('a'))).to.not.equal(undefined)
    expect(await store.load('t1', as('a'))).to.equal(undefined)
  })

  it('scopes tasks by credential: load and list see only the caller\'s', async () => {
    const store = new BoundedTaskStore({ max: 10, ttl: 60_000, isRunning: () => false })
    await store.save(task('mine'), as('a'))
    await store.save(task('theirs'), as('b'))
    expect(await store.load('theirs', as('a'))).to.equal(undefined)
    const listed = await store.list({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined }, as('a'))
    expect(listed.tasks.map((entry) => entry.id)).to.deep.equal(['mine'])
    expect(listed.totalSize).to.equal(1)
  })
})

describe('serve-a2a: 3,000 tasks through a real server', function () {
  this.timeout(180_000)
  let served: Served
  before(async () => {
    served = await serve({ maxStoredTasks: 50, maxConcurrentTasks: 8, rateLimit: 100_000 }, () => ScriptedModel.text('x'.repeat(2_000)))
  })
  after(() => served.ctx.stop())

  it('keeps the stored tasks at the cap (memory flat in count), and every task completes', async () => {
    const client = await client10(served.server.url, bearer(served.server.token))
    let completed = 0
    let most = 0
    for (let batch = 0; batch < 375; batch++) {
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => client.sendMessage(message10(`task ${batch * 8 + i}`) as never)))
      for (const result of results) if ((result as unknown as Task).status?.state === TaskState.TASK_STATE_COMPLETED) completed++
      most = Math.max(most, served.server.storedTasks)
    }
    expect(completed).to.equal(3_000)
    expect(most).to.equal(50)
    expect(served.server.storedTasks).to.equal(50)
    expect(served.server.runningTasks).to.equal(0)
  })
})

describe('serve-a2a: stopping', function () {
  this.timeout(30_000)

  it('ctx.stop() aborts a running task (its stream ends canceled), closes every connection, and a reload takes the same port', async () => {
    const served = await serve({}, (request: GenerateRequest) => new Promise((_, reject) => {
      request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
    }))
    const port = served.server.port
    const client = await client10(served.server.url, bearer(served.server.token))
    const stream = client.sendMessageStream(message10('forever') as never)
    const first = await stream.next()
    expect(first.done).to.equal(false)
    // An idle keep-alive connection that must not hold the stop.
    const idle = connect(port, '127.0.0.1')
    await new Promise((resolve) => idle.once('connect', resolve))
    const closed = new Promise((resolve) => idle.once('close', resolve))
    await served.ctx.stop()
    await closed
    const rest: unknown[] = []
    try {
      for await (const event of { [Symbol.asyncIterator]: () => stream }) rest.push(event)
    } catch {
      // The connection closed under the stream: also an end.
    }
    const last = JSON.stringify(rest.at(-1) ?? {})
    expect(last).to.match(/"state":5/)
    const again = await serve({ port })
    try {
      expect(again.server.port).to.equal(port)
      const answer = await rpc(again.server.url, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, { 'A2A-Version': '1.0', ...bearer(again.server.token) })
      expect(answer.status).to.equal(200)
      // A new start has a new token: the old one is refused.
      expect(again.server.token).to.not.equal(served.server.token)
      const old = await rpc(again.server.url, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, { 'A2A-Version': '1.0', ...bearer(served.server.token) })
      expect(old.status).to.equal(401)
    } finally {
      await again.ctx.stop()
    }
  })
  it('unloaded while it starts (at any turn of the loop), it leaves nothing listening, and a load that stays takes the port', async () => {
    const ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, {})
    await ctx.start()
    try {
      const port = await freePort()
      expect(await unloadedWhileStarting(() => ctx.plugin(A2aServer, { port }), port)).to.deep.equal({ left: [], stays: true })
      expect(ctx.get('a2aServer')?.url).to.include(`:${port}`)
    } finally {
      await ctx.stop()
    }
  })
  it('reloaded at once while it starts (a quick double reload), the load that follows takes its fixed port every time', async () => {
    const ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, {})
    await ctx.start()
    try {
      const port = await freePort()
      expect(await reloadedWhileStarting(() => ctx.plugin(A2aServer, { port }), port)).to.deep.equal([])
    } finally {
      await ctx.stop()
    }
  })
})

