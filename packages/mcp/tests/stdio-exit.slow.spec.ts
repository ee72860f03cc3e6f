/// <reference types="mocha" />
// A stdio server is gone when its main process exits, even while a process it started holds the pipes open:
// close() settles, calls in flight fail MCP_SERVER_CLOSED at once, and what it left in its group is stopped.
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { within } from '@cordis-subagents/test-support'
import { liveServerGroups } from '@cordis-subagents/mcp/testing'
import { alive, client, eventually, fixturePid, makeExec, setup, tempDir } from './helpers.js'

const HOSTILE = fileURLToPath(new URL('./fixtures/stdio-hostile.mjs', import.meta.url))

/** Alive and not a zombie: a process the server left is reaped by whoever adopts it, maybe not at once. */
function running(pid: number): boolean {
  if (!alive(pid)) return false
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

describe('@cordis-subagents/mcp: a stdio server whose main process exits', function () {
  this.timeout(60_000)
  let ctx: Context
  let dir: string
  let pidFile: string
  const holder = () => Number(readFileSync(`${pidFile}.gc`, 'utf8'))

  beforeEach(async () => {
    ({ ctx } = await setup())
    dir = tempDir('mcp-stdio-exit-')
    pidFile = join(dir, 'server.pid')
  })

  afterEach(async () => {
    try {
      process.kill(holder(), 'SIGKILL')
    } catch {
      // not started, or already stopped
    }
    await ctx.stop()
    await ctx.lifecycle.flush()
    rmSync(dir, { recursive: true, force: true })
  })

  it('close() settles when a process in a session of its own keeps the server\'s stdout open; the group is untracked, the process stopped', async () => {
    const policy = { ...client.DEFAULT_SENT_SERVER_POLICY, killGrace: 300 }
    const servers = await client.startSentServers([{ name: 'orphan', command: process.execPath, args: [HOSTILE, 'orphan-pipe', pidFile] }],
      policy, dir, ctx.logger('spec'))
    const [pid] = servers.pids()
    expect(await servers.tools[0].execute({}, makeExec())).to.deep.equal({ content: 'started' })
    expect(running(holder())).to.equal(true)
    await within(servers.close(), 15_000, 'close()')
    expect(alive(pid)).to.equal(false)
    expect(liveServerGroups()).to.not.include(pid)
    // It left the server's group (a session of its own) while the server ran: found as a descendant when the stop began, and killed.
    await eventually('the process in a session of its own is stopped with the server', () => !running(holder()))
  })

  it('a main process that exits while its group holds the pipes fails the call in flight MCP_SERVER_CLOSED and stops the group', async () => {
    ctx.plugin(client, { name: 'keep', command: process.execPath, args: [HOSTILE, 'crash-keep-pipe', pidFile], callTimeout: 60_000, killGrace: 300 })
    await eventually('keep__go mounted', () => ctx.tools.has('keep__go'))
    const pid = fixturePid(pidFile)
    const result = await within(ctx.tools.view().execute({ name: 'keep__go', input: {} }, makeExec()), 15_000, 'the call')
    expect(result.isError).to.equal(true)
    expect(result.content).to.include('MCP_SERVER_CLOSED').and.include('code 7')
    await eventually('the tools are removed', () => !ctx.tools.has('keep__go'))
    await eventually('the process left in the server\'s group is stopped', () => !running(holder()))
    expect(liveServerGroups()).to.not.include(pid)
  })
})
