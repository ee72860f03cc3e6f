/// <reference types="mocha" />
// A served delegation as an MCP task (2025-11-25), through the official SDK client over 127.0.0.1: the
// tools advertise task support; a client that asks for a task gets one (tasks/get, tasks/result,
// tasks/list), tasks/cancel cancels the child, a task past its TTL is forgotten and its child cancelled,
// and a session holding maxTasks working tasks refuses the next with MCP_SERVE_TOO_MANY_TASKS. A client
// that does not ask gets a plain call as before.
import { join } from 'node:path'
import { expect } from 'chai'
import type { Context } from 'cordis'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CreateTaskResultSchema, CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { connect, delegatingApp } from './delegating-app.js'
import { eventually, readLog, tempDir } from './helpers.js'

const text = (result: object) => ((result as { content: Array<{ text: string }> }).content)[0].text

function createTask(client: Client, prompt: string, ttl = 60_000) {
  return client.request(
    { method: 'tools/call', params: { name: 'subagent', arguments: { description: 'a task', prompt }, task: { ttl } } },
    CreateTaskResultSchema,
  ).then((created) => created.task)
}

async function status(client: Client, taskId: string) {
  return (await client.experimental.tasks.getTask(taskId)).status
}

describe('serve-mcp: a delegation as an MCP task', function () {
  this.timeout(60_000)
  let ctx: Context | undefined
  let client: Client | undefined
  let log: string
  const previousLog = process.env.MCP_SPEC_LOG

  beforeEach(() => {
    log = join(tempDir('serve-mcp-tasks-'), 'model.log')
    process.env.MCP_SPEC_LOG = log
  })

  afterEach(async () => {
    await client?.close().catch(() => {})
    client = undefined
    await ctx?.stop()
    ctx = undefined
    if (previousLog === undefined) delete process.env.MCP_SPEC_LOG
    else process.env.MCP_SPEC_LOG = previousLog
  })

  it('advertises task support; a task is created, polled, listed and its result read; a plain call still works', async () => {
    ctx = await delegatingApp({})
    client = await connect(ctx)
    expect(client.getServerCapabilities()?.tasks).to.deep.include({ list: {}, cancel: {}, requests: { tools: { call: {} } } })
    expect((await client.listTools()).tools.map((t) => [t.name, t.execution?.taskSupport])).to.deep.equal([['subagent', 'optional']])

    const task = await createTask(client, 'ECHO from a task')
    expect(task.status).to.equal('working')
    expect(task.ttl).to.equal(60_000)
    expect((await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).to.deep.equal([task.taskId])
    await eventually('the task completes', async () => (await status(client!, task.taskId)) === 'completed')
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
    expect(result.isError).to.not.equal(true)
    expect(text(result)).to.contain('child says from a task')

    const plain = await client.callTool({ name: 'subagent', arguments: { description: 'plain', prompt: 'ECHO plainly' } })
    expect(text(plain)).to.contain('child says plainly')
    expect(ctx.subagents.runs()).to.deep.equal([])
  })

  it('tasks/result waits for a working task; a child\'s progress is the task\'s statusMessage', async () => {
    ctx = await delegatingApp({})
    client = await connect(ctx)
    const task = await createTask(client, 'ECHO waited for')
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
    expect(text(result)).to.contain('child says waited for')
    const done = await client.experimental.tasks.getTask(task.taskId)
    expect(done.status).to.equal('completed')
    expect(done.statusMessage, 'the last progress line').to.be.a('string').and.not.equal('subagent')
  })

  it('tasks/cancel cancels the child: the model call is aborted, the result says cancelled, nothing stays live', async () => {
    ctx = await delegatingApp({})
    client = await connect(ctx)
    const task = await createTask(client, 'WAIT')
    await eventually('the child waits', () => readLog(log).includes('waiting'))
    expect(ctx.subagents.runs()).to.have.length(1)
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId)
    expect(cancelled.status).to.equal('cancelled')
    await eventually('the child was aborted', () => readLog(log).includes('aborted'))
    await eventually('no run stays live', () => ctx!.subagents.runs().length === 0)
    expect(await status(client, task.taskId)).to.equal('cancelled')
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
    expect(result.isError).to.equal(true)
    expect(text(result)).to.match(/^MCP_SERVE_TASK_CANCELLED: /)
    await client.experimental.tasks.cancelTask(task.taskId).then(
      () => expect.fail('a finished task cannot be cancelled again'),
      (error: Error) => expect(error.message).to.match(/terminal status: cancelled/),
    )
  })

  it('a task past its TTL is forgotten and its working child cancelled; a client\'s ttl above taskTtl is lowered', async () => {
    ctx = await delegatingApp({ taskTtl: 1_000 })
    client = await connect(ctx)
    const before = Date.now()
    const task = await createTask(client, 'WAIT', 600_000)
    expect(task.ttl).to.equal(1_000)
    await eventually('the child waits', () => readLog(log).includes('waiting'))
    await eventually('the task is forgotten', () => status(client!, task.taskId).then(() => false, (error: Error) => /not found/i.test(error.message)))
    expect(Date.now() - before, 'forgotten no sooner than its TTL').to.be.at.least(1_000)
    await eventually('the child was aborted', () => readLog(log).includes('aborted'))
    await eventually('no run stays live', () => ctx!.subagents.runs().length === 0)
    expect((await client.experimental.tasks.listTasks()).tasks).to.deep.equal([])
  })

  it('past maxTasks working tasks the next is refused with MCP_SERVE_TOO_MANY_TASKS; a finished one makes room', async () => {
    ctx = await delegatingApp({ maxTasks: 2 })
    client = await connect(ctx)
    const first = await createTask(client, 'WAIT')
    await createTask(client, 'WAIT')
    const refused = await createTask(client, 'ECHO third').then(() => undefined, (error: unknown) => error)
    expect(refused).to.be.instanceOf(McpError)
    expect((refused as McpError).code).to.equal(-32000)
    expect((refused as McpError).data).to.deep.equal({ code: 'MCP_SERVE_TOO_MANY_TASKS' })
    expect((refused as McpError).message).to.match(/MCP_SERVE_TOO_MANY_TASKS: this session already runs 2 tasks \(maxTasks 2\)/)
    await client.experimental.tasks.cancelTask(first.taskId)
    const third = await createTask(client, 'ECHO third')
    const tasks = (await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)
    expect(tasks).to.have.length(2)
    expect(tasks).to.not.include(first.taskId)
    expect(text(await client.experimental.tasks.getTaskResult(third.taskId, CallToolResultSchema))).to.contain('child says third')
  })

  it('closing the session (DELETE) cancels its working tasks', async () => {
    ctx = await delegatingApp({})
    client = await connect(ctx)
    await createTask(client, 'WAIT')
    await eventually('the child waits', () => readLog(log).includes('waiting'))
    await (client.transport as StreamableHTTPClientTransport).terminateSession()
    await client.close()
    client = undefined
    await eventually('the child was aborted', () => readLog(log).includes('aborted'))
    await eventually('no run stays live', () => ctx!.subagents.runs().length === 0)
  })
})
