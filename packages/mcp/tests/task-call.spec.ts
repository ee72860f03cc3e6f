/// <reference types="mocha" />
// callAsTask (a tool that requires an MCP task) against a scripted peer in this process (the SDK's in-memory
// transport): whatever way a call ends, the SDK client's progress handler and its taskId → token entry of that
// call are released (the SDK kept both until the connection closed, holding the call's onProgress closure), a
// progress notification during the task still reaches onProgress, no abort listener is left on the call's signal (the
// SDK added one per poll), and a taskId over MAX_TASK_ID_CHARS fails the call. A created task the call leaves
// unfinished (a poll error, an input_required task whose result fails, LiveTasks.cancelAll) gets one tasks/cancel;
// a task seen ended gets none. The call's bound is in-process time: a wall-clock step neither ends it early with
// TaskTimeout (forward) nor stretches it by the step (back).
import { getEventListeners } from 'node:events'
import { expect } from 'chai'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { withSteppedClock, within } from '@cordis-subagents/test-support'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import { clientSdk, type ClientSdk } from '../src/sdk.js'
import { callAsTask, LiveTasks, type TaskCallOptions } from '../src/task-call.js'

/** task-call.ts's bound on a server's taskId. */
const MAX_TASK_ID_CHARS = 256

type Status = 'working' | 'completed' | 'failed' | 'cancelled' | 'input_required'

/** How the peer answers one task: the create answer's taskId and status, then what each `tasks/get` says. */
interface Script {
  taskId: string
  created: Status
  polls?: Status[]
  statusMessage?: string
  /** Sent as `notifications/progress` (with the call's token) before the first `tasks/get` is answered. */
  progressMessage?: string
  /** `tasks/get` answers a JSON-RPC error. */
  pollFails?: boolean
  /** `tasks/result` answers a JSON-RPC error. */
  resultFails?: boolean
  /** The create answer lacks the task's other fields (an invalid CreateTaskResult). */
  invalid?: boolean
}

type Received = JSONRPCMessage & { id?: number; method?: string; params?: Record<string, unknown> }

interface SdkBooks {
  _progressHandlers: Map<number, unknown>
  _taskProgressTokens: Map<string, number>
}

/** What the SDK client holds for progress now; a renamed field fails here rather than reading as no growth. */
function books(client: Client) {
  const { _progressHandlers: handlers, _taskProgressTokens: tokens } = client as unknown as SdkBooks
  if (!(handlers instanceof Map) || !(tokens instanceof Map)) throw new Error('the SDK client\'s progress maps moved')
  return { handlers: handlers.size, tokens: tokens.size }
}

/** A peer that answers initialize and the tasks methods from the scripts queued for it, one per `tools/call`. */
class Peer {
  readonly scripts: Script[] = []
  readonly cancelled: string[] = []
  /** When set, create answers wait until this many calls came, then all go out at once (in one turn). */
  batchCreates = 0
  private readonly held: Array<() => void> = []
  private readonly tasks = new Map<string, { script: Script; polls: number; token?: unknown }>()

  constructor(private readonly transport: InMemoryTransport) {
    transport.onmessage = (message) => this.answer(message as Received)
  }

  private send(message: unknown) {
    void this.transport.send(message as JSONRPCMessage)
  }

  private task(taskId: string, status: Status, statusMessage?: string) {
    const now = new Date().toISOString()
    return { taskId, status, ttl: 60_000, createdAt: now, lastUpdatedAt: now, pollInterval: 50, ...statusMessage ? { statusMessage } : {} }
  }

  private answer(message: Received) {
    if (message.id === undefined || !message.method) return
    const reply = (result: unknown) => this.send({ jsonrpc: '2.0', id: message.id, result })
    const params = message.params ?? {}
    switch (message.method) {
      case 'initialize':
        return reply({
          protocolVersion: (params as { protocolVersion: string }).protocolVersion,
          capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
          serverInfo: { name: 'task-peer', version: '1' },
        })
      case 'tools/call': {
        const script = this.scripts.shift()!
        const token = (params as { _meta?: { progressToken?: unknown } })._meta?.progressToken
        this.tasks.set(script.taskId, { script, polls: 0, token })
        const task = this.task(script.taskId, script.created, script.statusMessage)
        const created = { task: script.invalid ? { taskId: script.taskId } : task }
        if (!this.batchCreates) return reply(created)
        this.held.push(() => reply(created))
        if (this.held.length === this.batchCreates) for (const go of this.held.splice(0)) go()
        return
      }
      case 'tasks/get': {
        const state = this.tasks.get((params as { taskId: string }).taskId)!
        if (state.script.progressMessage && state.polls === 0) {
          this.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: state.token, progress: 1, message: state.script.progressMessage } })
        }
        if (state.script.pollFails) return this.send({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: 'too many requests' } })
        const polls = state.script.polls ?? []
        return reply(this.task(state.script.taskId, polls[Math.min(state.polls++, polls.length - 1)] ?? 'working'))
      }
      case 'tasks/result': {
        const state = this.tasks.get((params as { taskId: string }).taskId)!
        if (state.script.resultFails) return this.send({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: 'the result is gone' } })
        return reply({ content: [{ type: 'text', text: `result of ${state.script.taskId.slice(0, 20)}` }] })
      }
      case 'tasks/cancel': {
        const taskId = (params as { taskId: string }).taskId
        this.cancelled.push(taskId)
        return reply(this.task(taskId, 'cancelled'))
      }
      default:
        return this.send({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } })
    }
  }
}

describe('@cordis-subagents/mcp: callAsTask releases what the SDK client keeps per task call', () => {
  let sdk: ClientSdk
  let client: Client
  let peer: Peer

  before(async () => {
    sdk = await clientSdk()
  })

  beforeEach(async () => {
    const [near, far] = InMemoryTransport.createLinkedPair()
    peer = new Peer(far)
    client = new sdk.Client({ name: 'spec', version: '1.0.0' }, { capabilities: {} })
    await client.connect(near)
  })

  afterEach(async () => {
    await client.close()
  })

  const options = (overrides: Partial<TaskCallOptions> = {}): TaskCallOptions => ({
    signal: new AbortController().signal, timeout: 5_000, onProgress: () => {}, ...overrides,
  })
  /** Abort listeners left on the calls' signals once they ended. */
  let listenersLeft = 0
  const call = async (script: Script, overrides: Partial<TaskCallOptions> = {}) => {
    peer.scripts.push(script)
    const signal = overrides.signal ?? new AbortController().signal
    try {
      return await callAsTask(client, sdk, 'job', {}, options({ ...overrides, signal }))
    } finally {
      listenersLeft += getEventListeners(signal, 'abort').length
    }
  }
  const failure = (pending: Promise<unknown>) => pending.then(() => { throw new Error('the call succeeded') }, (error: unknown) => error as Error)

  it('50 task calls ending every way (done, failed, server-cancelled, aborted, timed out, result error, invalid) leave both maps and no abort listener', async () => {
    const start = books(client)
    listenersLeft = 0
    let n = 0
    const id = () => `task-${++n}`
    for (let round = 0; round < 7; round++) {
      expect(await call({ taskId: id(), created: 'completed' })).to.have.property('content')
      const updates: Array<string | undefined> = []
      const polled = await call({ taskId: id(), created: 'working', polls: ['working', 'completed'], progressMessage: 'halfway' }, {
        onProgress: (progress) => updates.push(progress.message),
      })
      expect(polled).to.have.property('content')
      expect(updates, 'a progress notification during the task reaches onProgress').to.deep.equal(['halfway'])
      expect(await call({ taskId: id(), created: 'working', polls: ['failed'] })).to.have.property('content')
      expect(await call({ taskId: id(), created: 'cancelled' })).to.deep.include({ isError: true })
      const controller = new AbortController()
      const aborted = id()
      const stopped = await failure(call({ taskId: aborted, created: 'working', progressMessage: 'halfway' }, {
        signal: controller.signal, onProgress: () => controller.abort(new Error('stop')),
      }))
      expect(stopped).to.be.an.instanceOf(Error)
      expect(peer.cancelled).to.include(aborted)
      expect((await failure(call({ taskId: id(), created: 'working' }, { timeout: 60 }))).name).to.equal('TaskTimeout')
      expect((await failure(call({ taskId: id(), created: 'completed', resultFails: true }))).message).to.include('the result is gone')
      await failure(call({ taskId: id(), created: 'completed', invalid: true }))
    }
    expect(n).to.be.at.least(50)
    expect(books(client)).to.deep.equal(start)
    expect(listenersLeft, 'abort listeners left on the calls\' signals').to.equal(0)
  })

  it('two calls the server gives one taskId at once release their own entries, not each other\'s', async () => {
    const start = books(client)
    peer.batchCreates = 2
    const results = await Promise.all([call({ taskId: 'same', created: 'completed' }), call({ taskId: 'same', created: 'completed' })])
    expect(results).to.have.length(2)
    expect(books(client)).to.deep.equal(start)
  })

  it(`a taskId over ${MAX_TASK_ID_CHARS} characters fails the call, says why, cancels the task and keeps nothing`, async () => {
    const start = books(client)
    const long = 't'.repeat(10_000)
    const error = await failure(call({ taskId: long, created: 'working' }))
    expect(error.message.slice(0, 300)).to.equal(`the server named its task with an id of 10000 characters, over the ${MAX_TASK_ID_CHARS} this client accepts, ` +
      'so the task was cancelled (tasks/cancel); ask the server\'s authors for shorter task ids')
    expect(peer.cancelled).to.deep.equal([long])
    expect(books(client)).to.deep.equal(start)
    expect(await call({ taskId: 'k'.repeat(MAX_TASK_ID_CHARS), created: 'completed' })).to.have.property('content')
  })

  it('a created task the call leaves unfinished gets exactly one tasks/cancel; one seen ended gets none', async () => {
    const error = await failure(call({ taskId: 'poll-fails', created: 'working', pollFails: true }))
    expect(error.message).to.include('too many requests')
    expect(peer.cancelled).to.deep.equal(['poll-fails'])
    expect((await failure(call({ taskId: 'asks', created: 'working', polls: ['input_required'], resultFails: true }))).message).to.include('the result is gone')
    expect(peer.cancelled).to.deep.equal(['poll-fails', 'asks'])
    await failure(call({ taskId: 'done', created: 'working', polls: ['completed'], resultFails: true }))
    await failure(call({ taskId: 'done-at-once', created: 'failed', resultFails: true }))
    expect(await call({ taskId: 'theirs', created: 'working', polls: ['cancelled'] })).to.deep.include({ isError: true })
    expect(await call({ taskId: 'fine', created: 'working', polls: ['working', 'completed'] })).to.have.property('content')
    expect(peer.cancelled, 'tasks seen ended, or whose result was read, are not cancelled').to.deep.equal(['poll-fails', 'asks'])
  })

  it('LiveTasks.cancelAll cancels a call\'s running task once; the call\'s own end sends no second cancel', async () => {
    const live = new LiveTasks()
    const controller = new AbortController()
    const pending = failure(call({ taskId: 'held', created: 'working', polls: ['working'] }, { live, signal: controller.signal }))
    await pause(150)
    await live.cancelAll()
    expect(peer.cancelled, 'the running task was held and cancelled').to.deep.equal(['held'])
    controller.abort(new Error('closing'))
    expect((await pending).message).to.equal('closing')
    expect(peer.cancelled).to.deep.equal(['held'])
    await live.cancelAll()
    expect(peer.cancelled, 'a call that ended is no longer held').to.deep.equal(['held'])
  })

  it('a wall clock stepped an hour on mid-call does not end it with TaskTimeout', async () => {
    const result = await withSteppedClock((step) => call(
      { taskId: 'stepped-on', created: 'working', polls: ['working', 'working', 'completed'], progressMessage: 'halfway' },
      { timeout: 5_000, onProgress: () => step(3_600_000) },
    ))
    expect(result).to.have.property('content')
    expect(peer.cancelled).to.deep.equal([])
  })

  it('a wall clock stepped an hour back mid-call still ends it with TaskTimeout at its bound', async () => {
    const error = await withSteppedClock((step) => within(
      failure(call({ taskId: 'stepped-back', created: 'working', progressMessage: 'halfway' }, { timeout: 150, onProgress: () => step(-3_600_000) })),
      5_000, 'the call bounded by 150 ms',
    ))
    expect(error.name).to.equal('TaskTimeout')
    expect(peer.cancelled).to.deep.equal(['stepped-back'])
  })
})

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
