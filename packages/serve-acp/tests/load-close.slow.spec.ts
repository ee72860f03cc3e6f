// session/load and then session/close of one session, sent together (the close before the load's answer): the close
// waits for the load and closes what it opened, so the session ends closed, its agent disposed and the MCP server the
// load started reaped. Before, the close answered at once and the load then opened the session again.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { Context } from 'cordis'
import * as sdk from '@agentclientprotocol/sdk'
import AgentRuntime, { type Agent, ScriptedModel } from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import { eventually, processAlive as alive } from '@cordis-subagents/test-support'
import * as ServeAcp from '../src/index.js'
import { refusal } from './helpers.js'

const FIXTURE = fileURLToPath(new URL('../../mcp/tests/fixtures/server.mjs', import.meta.url))

describe('serve-acp: session/close sent while a session/load of it runs', function () {
  this.timeout(60_000)
  let dir: string
  let ctx: Context
  let made: Agent[]
  let read: string
  let connection: ReturnType<ReturnType<typeof sdk.client>['connect']>
  const createServed = AgentRuntime.prototype.createServed
  const pids: number[] = []

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'serve-acp-load-close-'))
    made = []
    read = ''
    AgentRuntime.prototype.createServed = function (this: AgentRuntime, ...args: Parameters<AgentRuntime['createServed']>) {
      const agent = createServed.apply(this, args)
      made.push(agent)
      return agent
    }
    ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, { model: 'scripted' })
    const model = new ScriptedModel((request) => ScriptedModel.text(`user messages: ${request.messages.filter((m) => m.role === 'user').length}`))
    ctx.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('scripted', model) } })
    await ctx.start()
    const toServer = new TransformStream<Uint8Array, Uint8Array>()
    const toClient = new TransformStream<Uint8Array, Uint8Array>()
    // What the server has read of its input: the spec lets the load go on only once the close reached the server.
    const decoder = new TextDecoder()
    const input = toServer.readable.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        read += decoder.decode(chunk, { stream: true })
        controller.enqueue(chunk)
      },
    }))
    ctx.plugin(ServeAcp, { transport: { input, output: toClient.writable }, store: join(dir, 'store') } as never)
    await ctx.lifecycle.flush()
    connection = sdk.client({ name: 'spec' }).connect(sdk.ndJsonStream(toServer.writable, toClient.readable))
    await connection.agent.request(sdk.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} })
  })

  afterEach(async () => {
    AgentRuntime.prototype.createServed = createServed
    await ctx.stop()
    for (const pid of pids.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  const agent = () => connection.agent
  const prompt = (sessionId: string, text: string) =>
    agent().request(sdk.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] })
  const close = (sessionId: string) => agent().request(sdk.methods.agent.session.close, { sessionId })

  /** session/load with a client stdio MCP server that starts only once `go` exists, and session/close right behind it. */
  async function loadAndClose(sessionId: string, name: string) {
    const go = join(dir, `${name}.go`)
    const log = join(dir, `${name}.log`)
    const script = `while [ ! -e "${go}" ]; do sleep 0.01; done; exec "${process.execPath}" "${FIXTURE}" "${log}"`
    const closes = read.split('"session/close"').length
    const load = agent().request(sdk.methods.agent.session.load, {
      sessionId, cwd: dir, mcpServers: [{ name: 'fixture', command: '/bin/sh', args: ['-c', script], env: [] }],
    })
    const settled = Promise.allSettled([load, close(sessionId)])
    // Both requests are on the server's input (the close after the load) before the load can finish.
    await eventually(() => read.split('"session/close"').length > closes, 'the close reached the server')
    writeFileSync(go, '')
    const answers = await settled
    const pid = await eventually(() => Number(/pid (\d+)/.exec(existsSync(log) ? readFileSync(log, 'utf8') : '')?.[1]) || 0, 'the load started its MCP server')
    pids.push(pid)
    return { answers, pid }
  }

  async function expectClosed(sessionId: string, pid: number) {
    const later = await refusal(prompt(sessionId, 'still open?'))
    expect(later.data).to.deep.include({ code: 'UNKNOWN_SESSION' })
    await eventually(() => !alive(pid), 'the MCP server the load started is reaped')
    await eventually(() => made.every((served) => served.disposed), 'every agent of the session is disposed')
  }

  it('a stored session: the load answers, then the close closes what it opened (a later prompt is UNKNOWN_SESSION)', async () => {
    const { sessionId } = await agent().request(sdk.methods.agent.session.new, { cwd: dir, mcpServers: [] })
    await prompt(sessionId, 'first words')
    expect(await close(sessionId)).to.deep.equal({})
    const { answers, pid } = await loadAndClose(sessionId, 'stored')
    expect(answers.map((answer) => answer.status)).to.deep.equal(['fulfilled', 'fulfilled'])
    expect((answers[1] as PromiseFulfilledResult<unknown>).value).to.deep.equal({})
    await expectClosed(sessionId, pid)
    // The stored copy stays: a load sent later opens the session again with its history.
    await agent().request(sdk.methods.agent.session.resume, { sessionId, cwd: dir, mcpServers: [] })
    expect((await prompt(sessionId, 'history?')).stopReason).to.equal('end_turn')
  })

  it('a session open here: the load re-opens it, then the close closes that one; nothing of it is left running', async () => {
    const { sessionId } = await agent().request(sdk.methods.agent.session.new, { cwd: dir, mcpServers: [] })
    await prompt(sessionId, 'first words')
    for (let round = 0; round < 3; round++) {
      const { answers, pid } = await loadAndClose(sessionId, `open-${round}`)
      expect(answers.map((answer) => answer.status), `round ${round}`).to.deep.equal(['fulfilled', 'fulfilled'])
      await expectClosed(sessionId, pid)
      await agent().request(sdk.methods.agent.session.resume, { sessionId, cwd: dir, mcpServers: [] })
    }
  })
})
