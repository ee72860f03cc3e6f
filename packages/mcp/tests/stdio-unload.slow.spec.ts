/// <reference types="mocha" />
// Unloading a stdio server's load is a scope task: `ctx.lifecycle.flush()` (which a reload and an app's stop await)
// returns only once the server's process group is stopped and reaped, even for a server that ignores SIGTERM.
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { within } from '@cordis-subagents/test-support'
import { liveServerGroups } from '@cordis-subagents/mcp/testing'
import { alive, client, eventually, fixturePid, setup, tempDir } from './helpers.js'

const HOSTILE = fileURLToPath(new URL('./fixtures/stdio-hostile.mjs', import.meta.url))

describe('@cordis-subagents/mcp: unloading a stdio server', function () {
  this.timeout(60_000)
  let ctx: Context
  let dir: string
  let pidFile: string

  const sticky = () => ctx.plugin(client, { name: 'sticky', command: process.execPath, args: [HOSTILE, 'sticky', pidFile], killGrace: 300 })
  const started = async () => {
    await eventually('sticky__go mounted', () => ctx.tools.has('sticky__go'))
    return fixturePid(pidFile)
  }

  beforeEach(async () => {
    ({ ctx } = await setup())
    dir = tempDir('mcp-stdio-unload-')
    pidFile = join(dir, 'server.pid')
  })

  afterEach(async () => {
    await ctx.stop()
    await ctx.lifecycle.flush()
    rmSync(dir, { recursive: true, force: true })
  })

  it('after a load\'s dispose, ctx.lifecycle.flush() returns once its server (which ignores SIGTERM) is reaped', async () => {
    const fork = sticky()
    const pid = await started()
    fork.dispose()
    await within(ctx.lifecycle.flush(), 15_000, 'ctx.lifecycle.flush()')
    expect(alive(pid)).to.equal(false)
    expect(liveServerGroups()).to.not.include(pid)
  })

  it('after ctx.stop(), ctx.lifecycle.flush() returns once the server is reaped', async () => {
    sticky()
    const pid = await started()
    await ctx.stop()
    await within(ctx.lifecycle.flush(), 15_000, 'ctx.lifecycle.flush()')
    expect(alive(pid)).to.equal(false)
    expect(liveServerGroups()).to.not.include(pid)
  })
})
