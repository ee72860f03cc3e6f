/// <reference types="mocha" />
// Our own MCP client (@cordis-subagents/mcp) against a server whose tools require tasks
// (`taskSupport: required`): it mounts the served delegation tool, runs it as a task (created, polled,
// result read). A plain call is refused there with
// MCP_SERVE_TASK_REQUIRED, so the answer can only have come through the task.
import { expect } from 'chai'
import { Context } from 'cordis'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js'
import ToolRegistry from '@cordis-subagents/tools'
import * as McpClient from '@cordis-subagents/mcp'
import { connect, delegatingApp } from './delegating-app.js'
import { SERVE_TOKEN } from './serve-app.js'
import { eventually } from './helpers.js'

describe('serve-mcp: tasks through our own MCP client', function () {
  this.timeout(60_000)
  let ctx: Context | undefined
  let app: Context | undefined
  let client: Client | undefined

  afterEach(async () => {
    await client?.close().catch(() => {})
    client = undefined
    await app?.stop()
    app = undefined
    await ctx?.stop()
    ctx = undefined
  })

  it('taskSupport required: a plain call is refused; our client runs the tool as a task and reads its answer', async () => {
    ctx = await delegatingApp({ taskSupport: 'required' })
    client = await connect(ctx)
    expect((await client.listTools()).tools.map((t) => t.execution?.taskSupport)).to.deep.equal(['required'])
    // The SDK's callTool refuses a required-task tool by itself; a raw tools/call is what another client may send.
    const plain = await client.request({ method: 'tools/call', params: { name: 'subagent', arguments: { description: 'plain', prompt: 'ECHO plain' } } }, CallToolResultSchema)
    expect(plain.isError).to.equal(true)
    expect((plain.content as Array<{ text: string }>)[0].text).to.match(/^MCP_SERVE_TASK_REQUIRED: /)

    app = new Context()
    app.plugin(ToolRegistry)
    app.plugin(McpClient, { name: 'served', url: ctx.mcpServe.url, headers: { Authorization: `Bearer ${SERVE_TOKEN}` } })
    await app.start()
    await eventually('the served tool is mounted', () => app!.tools.has('served__subagent'), 30_000)
    const result = await app.tools.view().execute({ name: 'served__subagent', input: { description: 'via our client', prompt: 'ECHO through a task' } }, {
      signal: new AbortController().signal, agent: { id: 'agent-1', depth: 0 }, toolCallId: 'call-1',
    })
    expect(result.isError, result.content).to.equal(undefined)
    expect(result.content).to.contain('child says through a task')
    expect(ctx.subagents.runs()).to.deep.equal([])
  })
})
