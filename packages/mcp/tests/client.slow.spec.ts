/// <reference types="mocha" />
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { rmSync, writeFileSync } from 'node:fs'
import { expect } from 'chai'
import type { Context, ForkScope } from 'cordis'
import { alive, client, eventually, FIXTURE_SERVER, fixturePid, makeExec, readLog, serverBin, setup, tempDir } from './helpers.js'

describe('@cordis-subagents/mcp: an MCP server as a tool source', function () {
  this.timeout(30_000)
  let ctx: Context
  let errors: unknown[]
  let dir: string
  let logFile: string

  const fixture = (config: Record<string, unknown> = {}): ForkScope => ctx.plugin(client, {
    name: 'fx', command: process.execPath, args: [FIXTURE_SERVER, logFile], ...config,
  })
  const names = () => ctx.tools.list().map((tool) => tool.name).sort()
  const call = (name: string, input: unknown = {}, exec = makeExec()) => ctx.tools.view().execute({ name, input }, exec)
  const mounted = async (name: string) => eventually(`${name} mounted`, () => ctx.tools.has(name))

  beforeEach(async () => {
    ({ ctx, errors } = await setup())
    dir = tempDir('mcp-client-')
    logFile = join(dir, 'server.log')
  })

  afterEach(async () => {
    await ctx.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('mounts server-filesystem\'s tools as files__<tool>, with the server\'s JSON Schema, and reads a real file', async () => {
    writeFileSync(join(dir, 'hello.txt'), 'hello from disk')
    ctx.plugin(client, { name: 'files', command: process.execPath, args: [serverBin('@modelcontextprotocol/server-filesystem'), dir] })
    await mounted('files__read_text_file')
    expect(names()).to.include.members(['files__list_directory', 'files__write_file'])
    const spec = ctx.tools.list().find((tool) => tool.name === 'files__read_text_file')!
    expect(spec.parameters).to.have.nested.property('properties.path.type', 'string')
    expect(spec.parameters).to.not.have.property('$schema')
    const result = await call('files__read_text_file', { path: join(dir, 'hello.txt') })
    expect(result).to.deep.equal({ content: 'hello from disk' })
    const outside = await call('files__read_text_file', { path: '/etc/hostname' })
    expect(outside.isError).to.equal(true)
    expect(outside.content).to.match(/outside allowed directories|Access denied/i)
    const invalid = await call('files__read_text_file', { path: 1 })
    expect(invalid.isError).to.equal(true)
    expect(invalid.content).to.include('Invalid input for tool "files__read_text_file"')
    expect(errors).to.deep.equal([])
  })

  it('converts server-everything\'s results: text, an image passed on (and noted with mime type and size), structured content', async () => {
    ctx.plugin(client, { name: 'every', command: process.execPath, args: [serverBin('@modelcontextprotocol/server-everything'), 'stdio'] })
    await mounted('every__echo')
    expect(await call('every__echo', { message: 'hi' })).to.deep.equal({ content: 'Echo: hi' })
    const image = await call('every__get-tiny-image')
    expect(image.isError).to.equal(undefined)
    expect(image.content).to.match(/\[image image\/png, \d+ bytes; shown to models that accept images\]/)
    expect(image.images?.map((i) => i.mimeType)).to.deep.equal(['image/png'])
    expect(image.images![0].data).to.match(/^[A-Za-z0-9+/]+=*$/)
    const sum = await call('every__get-sum', { a: 2, b: 3 })
    expect(sum.content).to.include('5')
  })

  it('passes on an image within maxImages and maxImageBytes; the registry caps the text as before', async () => {
    fixture({ maxContentParts: 2, maxPartChars: 100 })
    await mounted('fx__parts')
    const result = await call('fx__parts', { count: 1 })
    expect(result.content.split('\n')[0]).to.equal('[image image/png, 300 bytes; shown to models that accept images]')
    expect(result.images).to.deep.equal([{ mimeType: 'image/png', data: Buffer.alloc(300).toString('base64') }])
  })

  it('bounds a result: at most maxContentParts parts of at most maxPartChars each, binary as notes', async () => {
    fixture({ maxContentParts: 3, maxPartChars: 100, maxImages: 0 })
    await mounted('fx__parts')
    const result = await call('fx__parts', { count: 10 })
    const lines = result.content.split('\n')
    expect(lines[0]).to.equal('[image image/png, 300 bytes, not shown]')
    expect(result.images).to.equal(undefined)
    expect(result.content).to.include('[cut: ').and.include('[8 more content parts not shown]')
    expect(result.content.length).to.be.below(3 * 200 + 200)
    expect(await call('fx__structured')).to.deep.equal({ content: '{"answer":42}' })
    expect(await call('fx__failing')).to.deep.equal({ isError: true, content: 'it went wrong' })
  })

  it('sanitizes a server tool name outside our rule (fx__dotted_name) and calls it by its own name', async () => {
    fixture()
    await mounted('fx__dotted_name')
    expect(await call('fx__dotted_name')).to.deep.equal({ content: 'dotted ran' })
  })

  it('allow and deny filter the server\'s tools by their own names', async () => {
    fixture({ allow: ['echo', 'slow', 'crash'], deny: ['crash'] })
    await mounted('fx__echo')
    expect(names()).to.deep.equal(['fx__echo', 'fx__slow'])
  })

  it('follows notifications/tools/list_changed: an added tool appears, a removed one goes', async () => {
    fixture()
    await mounted('fx__add_tool')
    expect(await call('fx__add_tool', { name: 'later' })).to.deep.equal({ content: 'added later' })
    await mounted('fx__later')
    expect(await call('fx__later')).to.deep.equal({ content: 'later ran' })
    await call('fx__remove_tools')
    await eventually('fx__later removed', () => !ctx.tools.has('fx__later'))
    expect(ctx.tools.has('fx__echo')).to.equal(true)
  })

  it('an aborted call reaches the server as notifications/cancelled', async () => {
    fixture()
    await mounted('fx__slow')
    const controller = new AbortController()
    const pending = call('fx__slow', {}, makeExec({ signal: controller.signal }))
    await eventually('the slow call reached the server', () => readLog(logFile).includes('slow started'))
    controller.abort(new Error('the parent cancelled'))
    const result = await pending
    expect(result.isError).to.equal(true)
    expect(result.content).to.include('cancelled').and.include('notifications/cancelled')
    await eventually('the server saw the cancel', () => readLog(logFile).includes('cancelled\n'))
  })

  it('a call over callTimeout fails with MCP_TIMEOUT, and the server is told to cancel', async () => {
    fixture({ callTimeout: 200 })
    await mounted('fx__slow')
    const result = await call('fx__slow')
    expect(result.isError).to.equal(true)
    expect(result.content).to.include('MCP_TIMEOUT')
    await eventually('the server saw the cancel', () => readLog(logFile).includes('cancelled\n'))
  })

  it('a server crash mid-call fails that call with MCP_SERVER_CLOSED and unmounts only that server\'s tools', async () => {
    fixture()
    ctx.plugin(client, { name: 'files', command: process.execPath, args: [serverBin('@modelcontextprotocol/server-filesystem'), dir] })
    await mounted('fx__crash')
    await mounted('files__list_directory')
    const pid = fixturePid(logFile)
    const result = await call('fx__crash')
    expect(result.isError).to.equal(true)
    expect(result.content).to.include('MCP_SERVER_CLOSED').and.include('code 3').and.include('crashing on purpose')
    await eventually('fx tools removed', () => !names().some((name) => name.startsWith('fx__')))
    expect(alive(pid)).to.equal(false)
    expect(ctx.tools.has('files__list_directory')).to.equal(true)
  })

  it('unloading stops and reaps the server process (one that outlives its stdin gets SIGTERM), and removes its tools', async () => {
    const fork = fixture({ env: { FIXTURE_STAY: '1' }, killGrace: 200 })
    await mounted('fx__echo')
    const pid = fixturePid(logFile)
    expect(alive(pid)).to.equal(true)
    fork.dispose()
    expect(names()).to.deep.equal([])
    await eventually('the server process is gone', () => !alive(pid))
  })

  it('a host that exits without unloading still takes its stdio servers (own process groups) down', async () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--conditions', 'cordis-subagents-source', '--no-experimental-require-module',
      fileURLToPath(new URL('./fixtures/exit-without-unload.ts', import.meta.url)), logFile], { encoding: 'utf8', timeout: 30_000 })
    expect(out).to.equal('mounted true groups 1\n')
    const pid = fixturePid(logFile)
    await eventually('the orphaned server is gone', () => !alive(pid))
  })

  it('a server that cannot start fails only its load with MCP_CONNECT_FAILED', async () => {
    const fork = ctx.plugin(client, { name: 'broken', command: process.execPath, args: ['-e', 'process.stderr.write("no such server\\n"); process.exit(2)'] })
    fixture()
    await mounted('fx__echo')
    await eventually('the broken load failed', () => errors.length > 0 || fork.uid === null || !!(fork as unknown as { error?: unknown }).error)
    const error = errors.find((e) => (e as { code?: string }).code === 'MCP_CONNECT_FAILED') as Error | undefined
    expect(error, String(errors)).to.not.equal(undefined)
    expect(error!.message).to.include('code 2').and.include('no such server')
  })

  it('bad config fails the load: both or neither of command and url, a url with credentials', async () => {
    for (const config of [{ name: 'x' }, { name: 'x', command: 'node', url: 'http://127.0.0.1:1/mcp' }, { name: 'x', url: 'http://u:secret@127.0.0.1:1/mcp' }]) {
      errors.length = 0
      ctx.plugin(client, config)
      await eventually('the load failed', () => errors.length > 0)
      expect(errors[0]).to.have.property('code', 'MCP_INVALID_CONFIG')
    }
  })

  it('a stdio server inherits only core variables (no credentials) plus env; env values are passed', async () => {
    process.env.MCP_SPEC_API_KEY = 'sk-spec-secret-1234567890'
    process.env.MCP_SPEC_PLAIN = 'plain'
    try {
      fixture({ inherit: 'all', env: { EXTRA: 'given', MCP_SPEC_PLAIN: false } })
      await mounted('fx__env')
      const result = await call('fx__env', { names: ['MCP_SPEC_API_KEY', 'MCP_SPEC_PLAIN', 'EXTRA', 'PATH'] })
      const env = JSON.parse(result.content) as Record<string, string | null>
      expect(env.MCP_SPEC_API_KEY).to.equal(null)
      expect(env.MCP_SPEC_PLAIN).to.equal(null)
      expect(env.EXTRA).to.equal('given')
      expect(env.PATH).to.be.a('string')
    } finally {
      delete process.env.MCP_SPEC_API_KEY
      delete process.env.MCP_SPEC_PLAIN
    }
  })
})
