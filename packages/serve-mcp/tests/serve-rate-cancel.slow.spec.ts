/// <reference types="mocha" />
// A client's cancel is never refused by the request rate limit: with maxRequestsPerMinute spent, a
// `notifications/cancelled`, a `tasks/cancel` and a session's DELETE still reach the call (its signal aborts)
// while any other request gets 429. Task clients are told a poll interval that fits the limit: task calls
// polled at the advertised interval (the SDK client's own loop) complete without a 429.
import { expect } from 'chai'
import { Context } from 'cordis'
import { z } from 'zod'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { ScriptedModel } from '@cordis-subagents/agent'
import McpServe from '@cordis-subagents/serve-mcp'
import { HttpFront } from '../src/http.js'
import { eventually } from './helpers.js'

const TOKEN = 'spec-token-0123456789'

describe('serve-mcp over HTTP: cancels past the rate limit, task polling within it', function () {
  this.timeout(60_000)
  let ctx: Context | undefined
  const clients: Client[] = []
  let started = 0
  let aborted = 0

  async function serve(config: Record<string, unknown>): Promise<Context> {
    const app = new Context()
    app.plugin(ToolRegistry)
    app.plugin(AgentRuntime, { model: 'test' })
    app.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('test', new ScriptedModel([])) } })
    app.plugin({
      name: 'tools', inject: ['tools'],
      apply: (c: Context) => {
        c.tools.register({
          name: 'wait', description: 'Waits until cancelled.', input: z.object({}),
          execute: (_input, exec) => new Promise((resolve) => {
            started++
            exec.signal.addEventListener('abort', () => {
              aborted++
              resolve({ content: 'cancelled' })
            }, { once: true })
          }),
        })
        c.tools.register({
          name: 'nap', description: 'Answers after ms.', input: z.object({ ms: z.number() }),
          execute: ({ ms }) => new Promise((resolve) => setTimeout(() => resolve({ content: `napped ${ms}` }), ms)),
        })
      },
    })
    app.plugin(McpServe, { transport: 'http', tools: ['wait', 'nap'], token: TOKEN, ...config })
    await app.start()
    await app.lifecycle.flush()
    await eventually('the server listens', () => !!app.get('mcpServe')?.url)
    return app
  }

  async function connect(): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
    const transport = new StreamableHTTPClientTransport(new URL(ctx!.mcpServe.url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } })
    const client = new Client({ name: 'spec', version: '1.0.0' })
    await client.connect(transport)
    clients.push(client)
    return { client, transport }
  }

  /** Spends the rest of the minute's requests: a plain call is refused with 429. */
  async function spend(client: Client) {
    for (let i = 0; i < 20; i++) {
      const refused = await client.callTool({ name: 'nap', arguments: { ms: 1 } }).then(() => false, (error: Error) => /429|too many requests/i.test(error.message))
      if (refused) return
    }
    throw new Error('the request limit never refused')
  }

  beforeEach(() => {
    started = 0
    aborted = 0
  })

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close().catch(() => {})
    await ctx?.stop()
    ctx = undefined
  })

  it('past maxRequestsPerMinute a notifications/cancelled still cancels the running call; other requests get 429', async () => {
    ctx = await serve({ maxRequestsPerMinute: 5 })
    const { client } = await connect()
    const controller = new AbortController()
    const pending = client.callTool({ name: 'wait', arguments: {} }, undefined, { signal: controller.signal })
    pending.catch(() => {})
    await eventually('the call runs', () => started === 1)
    await spend(client)
    controller.abort(new Error('the user cancelled'))
    await pending.then(() => { throw new Error('expected the call to reject') }, (error: Error) => expect(error.message).to.match(/cancel/i))
    await eventually('the served call was aborted', () => aborted === 1, 5000)
    await spend(client)
  })

  it('past maxRequestsPerMinute a tasks/cancel still cancels the task and aborts its call', async () => {
    ctx = await serve({ maxRequestsPerMinute: 6 })
    const { client } = await connect()
    const { task } = await client.request({ method: 'tools/call', params: { name: 'wait', arguments: {}, task: { ttl: 60_000 } } }, CreateTaskResultSchema)
    await eventually('the task runs', () => started === 1)
    await spend(client)
    await client.experimental.tasks.cancelTask(task.taskId)
    await eventually('the task\'s call was aborted', () => aborted === 1, 5000)
  })

  it('past maxRequestsPerMinute a session\'s DELETE still ends it and aborts its running call', async () => {
    ctx = await serve({ maxRequestsPerMinute: 5 })
    const { client, transport } = await connect()
    client.callTool({ name: 'wait', arguments: {} }).catch(() => {})
    await eventually('the call runs', () => started === 1)
    await spend(client)
    await transport.terminateSession()
    await eventually('the session ended', () => ctx!.mcpServe.sessions === 0, 5000)
    await eventually('its call was aborted', () => aborted === 1, 5000)
  })

  it('concurrent task calls polled at the advertised interval complete without 429 (maxRequestsPerMinute 60)', async () => {
    // The limit's minute made 6 s, and every wait with it (the interval 6 s → 600 ms, the nap 7 s → 700 ms): the same
    // requests against the same limit in a tenth of the time. (The poll floor, 250 ms, stays below the interval.)
    const minute = HttpFront.minuteMs
    HttpFront.minuteMs = 6_000
    try {
      ctx = await serve({ maxRequestsPerMinute: 60 })
      const { client } = await connect()
      const intervals: number[] = []
      const run = async (i: number) => {
        const stream = client.experimental.tasks.callToolStream({ name: 'nap', arguments: { ms: 700 } }, CallToolResultSchema, { task: { ttl: 60_000 } })
        for await (const message of stream) {
          if (message.type === 'taskCreated' || message.type === 'taskStatus') intervals.push(message.task.pollInterval ?? 0)
          if (message.type === 'error') throw message.error
          if (message.type === 'result') return (message.result.content as Array<{ text: string }>)[0].text
        }
        throw new Error(`task ${i} ended without a result`)
      }
      expect(await Promise.all([0, 1, 2].map(run))).to.deep.equal(['napped 700', 'napped 700', 'napped 700'])
      // 3 working tasks in half of 60 requests a minute (of 6 s): each polls every 600 ms (6 s in a real minute).
      expect(Math.max(...intervals)).to.equal(600)
    } finally {
      HttpFront.minuteMs = minute
    }
  })
})
