/// <reference types="mocha" />
// Task-augmented tools (MCP 2025-11-25 tasks) through our client, against server-everything from npm:
// its simulate-research-query requires a task (the SDK's callTool refuses it). Mounted like any tool, it
// is created as a task, polled, and its result read; each new status message comes as progress; the call's
// bound (callTimeout) holds for the whole task, and an abort ends the call.
import { expect } from 'chai'
import type { Context } from 'cordis'
import type { ToolUpdate } from '@cordis-subagents/tools'
import { client, eventually, makeExec, serverBin, setup } from './helpers.js'

describe('@cordis-subagents/mcp: task-augmented tools', function () {
  this.timeout(60_000)
  let ctx: Context
  let errors: unknown[]

  const load = (config: Record<string, unknown> = {}) => ctx.plugin(client, {
    name: 'every', command: process.execPath, args: [serverBin('@modelcontextprotocol/server-everything'), 'stdio'], ...config,
  })
  const call = (input: unknown, exec = makeExec()) => ctx.tools.view().execute({ name: 'every__simulate-research-query', input }, exec)

  beforeEach(async () => {
    ({ ctx, errors } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  it('runs simulate-research-query as a task: created, polled, its report read; status messages come as progress', async () => {
    load()
    await eventually('simulate-research-query mounted', () => ctx.tools.has('every__simulate-research-query'), 30_000)
    const updates: ToolUpdate[] = []
    const result = await call({ topic: 'tidal power' }, makeExec({ onUpdate: (update) => updates.push(update) }))
    expect(result.isError, result.content).to.equal(undefined)
    expect(result.content).to.include('Research Report: tidal power')
    const lines = updates.map((u) => u.text ?? '')
    expect(lines.length, lines.join(' | ')).to.be.greaterThan(1)
    expect(new Set(lines).size).to.equal(lines.length)
    expect(errors).to.deep.equal([])
  })

  it('the call\'s bound holds for the whole task: past callTimeout it fails MCP_TIMEOUT and the server is sent tasks/cancel', async () => {
    load({ callTimeout: 300 })
    await eventually('simulate-research-query mounted', () => ctx.tools.has('every__simulate-research-query'), 30_000)
    const started = Date.now()
    const result = await call({ topic: 'slow' })
    expect(Date.now() - started).to.be.at.least(300)
    expect(result.isError).to.equal(true)
    expect(result.content).to.match(/MCP_TIMEOUT: no answer within 300 ms; the server was told to cancel \(tasks\/cancel\)/)
  })

  it('an abort ends the task call and says tasks/cancel was sent', async () => {
    load()
    await eventually('simulate-research-query mounted', () => ctx.tools.has('every__simulate-research-query'), 30_000)
    const controller = new AbortController()
    const pending = call({ topic: 'aborted' }, makeExec({ signal: controller.signal, onUpdate: () => controller.abort(new Error('stop')) }))
    const result = await pending
    expect(result.isError).to.equal(true)
    expect(result.content).to.match(/the call was cancelled \(stop\); the MCP server was told \(tasks\/cancel\)/)
  })
})
