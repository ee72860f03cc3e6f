// serve-acp unloaded while a session/new still starts the MCP servers its client sent: no session opens, and the
// stdio server it was starting is stopped (its process reaped), not left running after the app stopped.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
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

const FIXTURE = fileURLToPath(new URL('../../mcp/tests/fixtures/server.mjs', import.meta.url))

describe('serve-acp unloaded while a session opens', function () {
  this.timeout(30_000)
  it('a session/new still starting its client\'s stdio MCP server: no session opens, and that server\'s process is reaped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'serve-acp-close-'))
    const log = join(dir, 'mcp.log')
    const begun = join(dir, 'begun')
    const ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, { model: 'scripted' })
    ctx.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('scripted', new ScriptedModel(() => ScriptedModel.text('hi'))) } })
    await ctx.start()
    const toServer = new TransformStream<Uint8Array, Uint8Array>()
    const toClient = new TransformStream<Uint8Array, Uint8Array>()
    const fork = ctx.plugin(ServeAcp, { transport: { input: toServer.readable, output: toClient.writable } } as never)
    await ctx.lifecycle.flush()
    const connection = sdk.client({ name: 'spec' }).connect(sdk.ndJsonStream(toServer.writable, toClient.readable))
    let pid = NaN
    try {
      await connection.agent.request(sdk.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} })
      // A server that takes a while to start: the unload comes while the request waits for it.
      const opening = connection.agent.request(sdk.methods.agent.session.new, {
        cwd: dir,
        mcpServers: [{ name: 'slow', command: '/bin/sh', args: ['-c', `: > "${begun}"; sleep 0.5; exec "${process.execPath}" "${FIXTURE}" "${log}"`], env: [] }],
      } as never).then(() => 'opened', (error: Error) => `refused: ${error.message}`)
      // Unloaded once the request is starting the server (its shell has begun), before the server answers.
      await eventually(() => existsSync(begun), 'the MCP server is starting')
      fork.dispose()
      // The connection closed with the unload: the request gets no answer; the server it started tells its pid.
      pid = await eventually(() => Number(/pid (\d+)/.exec(existsSync(log) ? readFileSync(log, 'utf8') : '')?.[1]) || 0, 'the MCP server started')
      await eventually(() => !alive(pid), 'the MCP server it was starting is reaped')
      expect(await Promise.race([opening, new Promise((resolve) => setTimeout(resolve, 100, 'no answer'))])).to.not.equal('opened')
    } finally {
      await ctx.stop()
      if (pid && alive(pid)) process.kill(pid, 'SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
