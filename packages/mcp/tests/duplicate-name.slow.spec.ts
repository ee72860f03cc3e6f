/// <reference types="mocha" />
// Two client loads with one server `name` would make the same `name__tool` tools and one `ctx.mcp` entry: the second is
// refused at load (MCP_DUPLICATE_NAME) before it starts anything, and the first load and `ctx.mcp` are untouched. The
// name is held in the load's scope: an unload frees it, and an edit that applies the same entry again takes it anew.
import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Context } from 'cordis'
import McpServers from '@cordis-subagents/mcp/servers'
import { liveServerGroups } from '@cordis-subagents/mcp/testing'
import { type App, startApp } from '@cordis-subagents/quickstart/app'
import { FIXTURE_SERVER, alive, client, eventually, fixturePid, setup, tempDir } from './helpers.js'

/** cordis `ScopeStatus.ACTIVE` / `ScopeStatus.FAILED`. */
const ACTIVE = 2
const FAILED = 3

const codeOf = (error: unknown) => (error as { code?: unknown } | undefined)?.code

describe('@cordis-subagents/mcp: two loads with one server name', function () {
  this.timeout(60_000)
  let dir: string

  beforeEach(() => {
    dir = tempDir('mcp-duplicate-name-')
  })

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  describe('on a context', () => {
    let ctx: Context
    let errors: unknown[]

    beforeEach(async () => {
      ({ ctx, errors } = await setup())
      ctx.plugin(McpServers)
      await ctx.lifecycle.flush()
    })

    afterEach(async () => {
      await ctx.stop()
      await ctx.lifecycle.flush()
    })

    it('the second load fails at load with MCP_DUPLICATE_NAME, starts no process, leaves the first and ctx.mcp as they were', async () => {
      const logA = join(dir, 'a.log')
      const logB = join(dir, 'b.log')
      const first = ctx.plugin(client, { name: 'files', command: process.execPath, args: [FIXTURE_SERVER, logA] })
      await ctx.lifecycle.flush()
      expect(first.status).to.equal(ACTIVE)
      const pidA = fixturePid(logA)
      const entryA = ctx.mcp.list()
      expect(entryA.map((e) => e.name)).to.deep.equal(['files'])

      const groups = liveServerGroups()
      expect(groups).to.include(pidA)
      const second = ctx.plugin(client, { name: 'files', command: process.execPath, args: [FIXTURE_SERVER, logB] })
      await ctx.lifecycle.flush()
      expect(second.status, 'the second load failed').to.equal(FAILED)
      const refusal = errors.find((error) => codeOf(error) === 'MCP_DUPLICATE_NAME') as Error | undefined
      expect(refusal, 'an MCP_DUPLICATE_NAME error').to.not.equal(undefined)
      expect(refusal!.message).to.include('"files"').and.match(/another @cordis-subagents\/mcp load/).and.match(/its own name/)
      expect(existsSync(logB), 'the second load started no server').to.equal(false)
      expect(liveServerGroups()).to.deep.equal(groups)
      expect(ctx.mcp.list()).to.deep.equal(entryA)
      expect(ctx.mcp.list()[0].tools()).to.include('files__echo')

      second.dispose()
      await ctx.lifecycle.flush()
      expect(ctx.mcp.list()).to.deep.equal(entryA)
      expect(ctx.tools.has('files__echo')).to.equal(true)
      expect(first.status).to.equal(ACTIVE)
      expect(alive(pidA)).to.equal(true)
    })

    it('an unloaded load frees its name: a later load with it starts', async () => {
      const first = ctx.plugin(client, { name: 'files', command: process.execPath, args: [FIXTURE_SERVER, join(dir, 'a.log')] })
      await ctx.lifecycle.flush()
      first.dispose()
      await ctx.lifecycle.flush()
      const second = ctx.plugin(client, { name: 'files', command: process.execPath, args: [FIXTURE_SERVER, join(dir, 'b.log')] })
      await ctx.lifecycle.flush()
      expect(second.status).to.equal(ACTIVE)
      expect(errors).to.deep.equal([])
      expect(ctx.tools.has('files__echo')).to.equal(true)
      expect(ctx.mcp.list().map((e) => e.name)).to.deep.equal(['files'])
    })
  })

  describe('through @cordisjs/loader', () => {
    let app: App | undefined

    afterEach(async () => {
      await app?.stop()
      app = undefined
    })

    const server = (log: string) => ({ name: 'files', command: process.execPath, args: [FIXTURE_SERVER, log] })
    const entry = (id: string) => [...app!.loader.entries()].find((e) => e.options.id === id)!
    const fork = (id: string) => entry(id).fork

    it('refuses the second entry; editing the first applies it again under the same name; unloading it frees the name', async () => {
      const [logA, logB, logA2] = ['a.log', 'b.log', 'a2.log'].map((file) => join(dir, file))
      writeFileSync(join(dir, 'cordis.yml'), `
- id: tools
  name: '@cordis-subagents/tools'
- id: servers
  name: '@cordis-subagents/mcp/servers'
- id: files-a
  name: '@cordis-subagents/mcp'
  config: ${JSON.stringify(server(logA))}
- id: files-b
  name: '@cordis-subagents/mcp'
  config: ${JSON.stringify(server(logB))}
`)
      app = await startApp(join(dir, 'cordis.yml'), { timeout: 30_000 })
      const errors: unknown[] = []
      app.ctx.on('internal/error', (error) => { errors.push(error) })
      expect(fork('files-a')?.status).to.equal(ACTIVE)
      expect(fork('files-b')?.status, 'files-b failed').to.equal(FAILED)
      expect(codeOf(fork('files-b')?.error)).to.equal('MCP_DUPLICATE_NAME')
      expect((fork('files-b')!.error as Error).message).to.include('files-a')
      expect(existsSync(logB)).to.equal(false)
      const pidA = fixturePid(logA)
      expect(app.ctx.mcp.list().map((e) => e.name)).to.deep.equal(['files'])

      // An edit of files-a restarts its scope: the name is freed with the old apply and taken by the new one.
      await entry('files-a').update({ config: server(logA2) })
      await app.ctx.lifecycle.flush()
      expect(fork('files-a')?.status).to.equal(ACTIVE)
      const pidA2 = fixturePid(logA2)
      expect(pidA2).to.not.equal(pidA)
      await eventually('the first server is reaped', () => !alive(pidA))
      expect(app.ctx.tools.has('files__echo')).to.equal(true)
      expect(app.ctx.mcp.list().map((e) => [e.name, e.tools().includes('files__echo')])).to.deep.equal([['files', true]])
      expect(errors).to.deep.equal([])

      // Unloading files-a frees the name: files-b, applied again, takes it.
      await entry('files-a').update({ disabled: true })
      await entry('files-b').update({ disabled: true })
      await entry('files-b').update({ disabled: false })
      await app.ctx.lifecycle.flush()
      expect(fork('files-b')?.status).to.equal(ACTIVE)
      expect(fixturePid(logB)).to.be.a('number')
      expect(app.ctx.tools.has('files__echo')).to.equal(true)
      expect(app.ctx.mcp.list().map((e) => e.name)).to.deep.equal(['files'])
      expect(errors).to.deep.equal([])
    })
  })
})
