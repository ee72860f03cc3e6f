// Concurrent session/new requests, each sending stdio MCP servers, with maxSessions 2: a request takes its session's
// slot before any of its servers starts, and openings past maxSessions wait for one to end, so no more than
// maxSessions × (servers per session) of them run at once. Before, every request started its servers first and
// made room only afterwards: 6 requests × 2 servers all ran together, each session evicting the one before.
// The servers are the mcp package's fixture, wrapped to count the copies alive at each start (fixtures/counted-mcp-server.mjs).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { Context } from 'cordis'
import * as sdk from '@agentclientprotocol/sdk'
import AgentRuntime, { ScriptedModel } from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import { eventually, processAlive as alive } from '@cordis-subagents/test-support'
import * as ServeAcp from '../src/index.js'
import { refusal } from './helpers.js'

const COUNTED = fileURLToPath(new URL('./fixtures/counted-mcp-server.mjs', import.meta.url))
const MAX_SESSIONS = 2
const SERVERS = 2
const REQUESTS = 6

describe('serve-acp: concurrent session/new with stdio MCP servers and maxSessions', function () {
  this.timeout(120_000)
  let dir: string
  let counts: string
  let ctx: Context
  let connection: ReturnType<ReturnType<typeof sdk.client>['connect']>

  const pids = () => readdirSync(counts).filter((name) => name.startsWith('pid-')).map((name) => Number(name.slice(4)))
  const peak = () => Math.max(0, ...(existsSync(join(counts, 'counts')) ? readFileSync(join(counts, 'counts'), 'utf8') : '')
    .split('\n').filter(Boolean).map((line) => Number(line.split(' ')[1])))

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'serve-acp-slots-'))
    counts = join(dir, 'servers')
    mkdirSync(counts)
    ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, { model: 'scripted' })
    ctx.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('scripted', new ScriptedModel(() => ScriptedModel.text('hi'))) } })
    await ctx.start()
    const toServer = new TransformStream<Uint8Array, Uint8Array>()
    const toClient = new TransformStream<Uint8Array, Uint8Array>()
    const transport = { input: toServer.readable, output: toClient.writable }
    ctx.plugin(ServeAcp, { transport, loadSession: false, maxSessions: MAX_SESSIONS } as never)
    await ctx.lifecycle.flush()
    connection = sdk.client({ name: 'spec' }).connect(sdk.ndJsonStream(toServer.writable, toClient.readable))
    await connection.agent.request(sdk.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} })
  })

  afterEach(async () => {
    await ctx.stop()
    // The server's close is held past ctx.stop (holdExit): every server it started is reaped soon after.
    try {
      await eventually(() => pids().every((pid) => !alive(pid)), 'every client MCP server is reaped after the stop', 20_000)
    } finally {
      for (const pid of pids()) if (alive(pid)) process.kill(pid, 'SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    }
  })

  const servers = () => Array.from({ length: SERVERS }, (_, i) => ({ name: `s${i}`, command: process.execPath, args: [COUNTED, counts], env: [] }))
  const open = () => connection.agent.request(sdk.methods.agent.session.new, { cwd: dir, mcpServers: servers() } as never)

  it(`${REQUESTS} at once: at most ${MAX_SESSIONS} × ${SERVERS} servers run at any time, every request opens, and the evicted sessions' servers are reaped`, async () => {
    const answers = await Promise.allSettled(Array.from({ length: REQUESTS }, open))
    expect(answers.map((answer) => answer.status)).to.deep.equal(Array(REQUESTS).fill('fulfilled'))
    const opened = answers.map((answer) => (answer as PromiseFulfilledResult<{ sessionId: string; _meta?: unknown }>).value)
    // Every server started (no failure reported), each copy once.
    expect(opened.map((session) => session._meta)).to.deep.equal(Array(REQUESTS).fill(undefined))
    expect(pids()).to.have.length(REQUESTS * SERVERS)
    expect(peak(), 'the most client MCP servers alive at once').to.be.at.most(MAX_SESSIONS * SERVERS)
    // The sessions opened last are the ones left; the servers of the ones they evicted are gone.
    await eventually(() => pids().filter(alive).length === MAX_SESSIONS * SERVERS, 'only the open sessions\' servers run')
    const prompted = await Promise.allSettled(opened.map(({ sessionId }) =>
      connection.agent.request(sdk.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hello' }] })))
    expect(prompted.filter((answer) => answer.status === 'fulfilled')).to.have.length(MAX_SESSIONS)
  })

  it('a list the policy refuses takes no slot: the open sessions stay, and their servers are not stopped for it', async () => {
    const first = await open()
    const second = await open()
    const running = pids().filter(alive)
    expect(running).to.have.length(MAX_SESSIONS * SERVERS)
    const error = await refusal(connection.agent.request(sdk.methods.agent.session.new, {
      cwd: dir, mcpServers: [{ type: 'sse', name: 'old', url: 'http://127.0.0.1:9/sse', headers: [] }],
    } as never))
    expect(error.data).to.deep.include({ code: 'MCP_SERVER_REFUSED' })
    expect(running.filter(alive)).to.deep.equal(running)
    for (const { sessionId } of [first, second]) {
      const answer = await connection.agent.request(sdk.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'still open?' }] })
      expect(answer.stopReason).to.equal('end_turn')
    }
  })
})
