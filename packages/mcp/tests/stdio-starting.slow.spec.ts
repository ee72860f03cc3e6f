/// <reference types="mocha" />
// A load disposed while its server starts (slow to answer `initialize`): the start is aborted at once. The server's group
// is stopped and reaped, `ctx.lifecycle.flush()` returns without waiting for `startupTimeout`, nothing is logged as a
// failure for the gone load, and when an edit applied the entry again, the stale start's end never touches the new load.
import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { within } from '@cordis-subagents/test-support'
import { liveServerGroups } from '@cordis-subagents/mcp/testing'
import { type App, startApp } from '@cordis-subagents/quickstart/app'
import { FIXTURE_SERVER, alive, client, eventually, fixturePid, readLog, setup, tempDir } from './helpers.js'

const HOSTILE = fileURLToPath(new URL('./fixtures/stdio-hostile.mjs', import.meta.url))

/** cordis `ScopeStatus.ACTIVE`. */
const ACTIVE = 2

/** A server that never answers `initialize` (and ignores SIGTERM and the end of stdin): a start that would take `startupTimeout`. */
const mute = (pidFile: string, startupTimeout: number) =>
  ({ name: 'slow', command: process.execPath, args: [HOSTILE, 'mute', pidFile], startupTimeout, killGrace: 200 })

describe('@cordis-subagents/mcp: a load disposed while its server starts', function () {
  this.timeout(120_000)
  let dir: string
  let pidFile: string

  beforeEach(() => {
    dir = tempDir('mcp-stdio-starting-')
    pidFile = join(dir, 'server.pid')
  })

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  describe('on a context', () => {
    let ctx: Context
    let errors: unknown[]

    beforeEach(async () => {
      ({ ctx, errors } = await setup())
    })

    afterEach(async () => {
      await ctx.stop()
      await ctx.lifecycle.flush()
    })

    it('an unload aborts the start: flush() returns long before startupTimeout (60 s), the server reaped, nothing logged', async () => {
      const fork = ctx.plugin(client, mute(pidFile, 60_000))
      await eventually('the server started', () => /pid \d+/.test(readLog(pidFile)))
      const pid = fixturePid(pidFile)
      expect(liveServerGroups()).to.include(pid)
      fork.dispose()
      await within(ctx.lifecycle.flush(), 20_000, 'ctx.lifecycle.flush() after the unload')
      expect(alive(pid), 'the server process is reaped').to.equal(false)
      expect(liveServerGroups()).to.not.include(pid)
      expect(errors).to.deep.equal([])
    })

    it('an unload right after the load (before its server is spawned) starts no server at all', async () => {
      const fork = ctx.plugin(client, mute(pidFile, 60_000))
      fork.dispose()
      await within(ctx.lifecycle.flush(), 20_000, 'ctx.lifecycle.flush() after the unload')
      expect(existsSync(pidFile), 'no server was started').to.equal(false)
      expect(errors).to.deep.equal([])
    })
  })

  describe('through @cordisjs/loader', () => {
    let app: App | undefined

    afterEach(async () => {
      await app?.stop()
      app = undefined
    })

    it('an edit while the server starts: the stale start is aborted, and its end neither fails nor unmounts the new load', async () => {
      const good = (log: string) => ({ name: 'files', command: process.execPath, args: [FIXTURE_SERVER, log] })
      writeFileSync(join(dir, 'cordis.yml'), `
- id: tools
  name: '@cordis-subagents/tools'
- id: servers
  name: '@cordis-subagents/mcp/servers'
- id: files
  name: '@cordis-subagents/mcp'
  config: ${JSON.stringify(good(join(dir, 'first.log')))}
`)
      app = await startApp(join(dir, 'cordis.yml'), { timeout: 30_000 })
      const errors: unknown[] = []
      app.ctx.on('internal/error', (error) => { errors.push(error) })
      const entry = [...app.loader.entries()].find((e) => e.options.id === 'files')!
      expect(app.ctx.tools.has('files__echo')).to.equal(true)

      // The user points the entry at a server slow to start (startupTimeout 3 s), then, while it starts, edits it back.
      await entry.update({ config: { ...mute(pidFile, 3_000), name: 'files' } })
      await eventually('the slow server started', () => /pid \d+/.test(readLog(pidFile)))
      const slowPid = fixturePid(pidFile)
      const log = join(dir, 'second.log')
      await entry.update({ config: good(log) })

      // The slow server goes (before: only once its startupTimeout passed, and then its failure cancelled the new load).
      await eventually('the slow server is reaped', () => !alive(slowPid), 20_000)
      await within(app.ctx.lifecycle.flush(), 20_000, 'ctx.lifecycle.flush() after the edit')
      expect(entry.fork?.status, 'the edited entry is active').to.equal(ACTIVE)
      expect(fixturePid(log)).to.be.a('number')
      expect(app.ctx.tools.has('files__echo'), 'the new load\'s tools are mounted').to.equal(true)
      expect(app.ctx.mcp.list().map((e) => [e.name, e.tools().includes('files__echo')])).to.deep.equal([['files', true]])
      expect(errors, 'nothing is logged for the stale start').to.deep.equal([])
      expect(liveServerGroups()).to.not.include(slowPid)
    })
  })
})
