/// <reference types="mocha" />
// Through the real @cordisjs/loader reading a cordis.yml: MCP servers as tool sources for a parent
// and its spawn children, and delegation served over Streamable HTTP to the SDK's own client.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { type App, startApp } from '@cordis-subagents/quickstart/app'
import { CORE_ENTRIES, alive, client, eventually, readLog, serverBin } from './helpers.js'
import { toolsSeen } from './fixtures/model-plugin.js'

/** The pid of this process's child whose command line mentions `what`. */
function childPid(what: string): number {
  const lines = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' }).split('\n')
  const line = lines.find((l) => l.includes(what))
  if (!line) throw new Error(`no child process running ${what}`)
  return Number(line.trim().split(/\s+/)[0])
}


function config(dir: string) {
  return `
${CORE_ENTRIES}
- id: spawn
  name: '@cordis-subagents/provider-spawn'
- id: files
  name: '@cordis-subagents/mcp'
  config:
    name: files
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(serverBin('@modelcontextprotocol/server-filesystem'))}, ${JSON.stringify(dir)}]
- id: every
  name: '@cordis-subagents/mcp'
  config:
    name: every
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(serverBin('@modelcontextprotocol/server-everything'))}, stdio]
    allow: [echo]
- id: tool-subagent
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: spawn
- id: tool-subagent-nofiles
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: spawn
    toolName: subagent_nofiles
    toolFilter:
      allow: [every__echo]
- id: serve
  name: '@cordis-subagents/serve-mcp'
  config:
    transport: http
    tools: [subagent, subagent_nofiles]
`
}

describe('@cordis-subagents/mcp through @cordisjs/loader', function () {
  this.timeout(60_000)
  let dir: string
  let app: App

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mcp-loader-'))
    writeFileSync(join(dir, 'notes.txt'), 'the secret word is heron')
    writeFileSync(join(dir, 'cordis.yml'), config(dir))
    app = await startApp(join(dir, 'cordis.yml'), { timeout: 30_000 })
    await eventually('MCP tools mounted', () => app.ctx.tools.has('files__read_text_file') && app.ctx.tools.has('every__echo'), 30_000)
  })

  after(async () => {
    await app?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const runParent = async (prompt: string) => {
    const parent = app.ctx.agents.create({ label: 'spec-parent' })
    try {
      return await parent.run(prompt, { signal: new AbortController().signal })
    } finally {
      await parent.dispose()
    }
  }

  it('a parent delegates to a spawn child that reads a real file through server-filesystem', async () => {
    const path = join(dir, 'notes.txt')
    const result = await runParent(`DELEGATE subagent READ ${path}`)
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('parent got: child read: the secret word is heron')
    expect(toolsSeen.get(`READ ${path}`)).to.include('files__read_text_file')
  })

  it('a denied server\'s tools are unknown to the child (subagent toolFilter by server__tool names)', async () => {
    const path = join(dir, 'notes.txt')
    const result = await runParent(`DELEGATE subagent_nofiles READ ${path}`)
    expect(toolsSeen.get(`READ ${path}`)).to.deep.equal(['every__echo'])
    expect(result.text).to.include('child read: Unknown tool "files__read_text_file"').and.not.include('heron')
  })

  describe('served over Streamable HTTP', () => {
    const connect = async (token = app.ctx.mcpServe.token) => {
      const client = new Client({ name: 'spec', version: '1.0.0' })
      await client.connect(new StreamableHTTPClientTransport(new URL(app.ctx.mcpServe.url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }))
      return client
    }

    it('binds loopback with a generated token; the SDK client lists the served tools and delegates', async () => {
      expect(app.ctx.mcpServe.url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
      expect(app.ctx.mcpServe.token).to.have.length.above(30)
      const client = await connect()
      try {
        const { tools } = await client.listTools()
        expect(tools.map((t) => t.name).sort()).to.deep.equal(['subagent', 'subagent_nofiles'])
        expect(tools[0].inputSchema).to.have.nested.property('properties.prompt')
        const progress: unknown[] = []
        const path = join(dir, 'notes.txt')
        const result = await client.callTool({ name: 'subagent', arguments: { description: 'read', prompt: `READ ${path}` } }, undefined, {
          onprogress: (p) => progress.push(p),
        })
        expect(result.isError).to.not.equal(true)
        expect(result.content).to.deep.equal([{ type: 'text', text: 'child read: the secret word is heron' }])
        expect(progress.length).to.be.above(0)
        const hidden = await client.callTool({ name: 'files__read_text_file', arguments: { path } })
        expect(hidden.isError).to.equal(true)
        expect(JSON.stringify(hidden.content)).to.include('Unknown tool').and.not.include('heron')
      } finally {
        await client.close()
      }
    })

    it('a client cancel (notifications/cancelled) cancels the child', async () => {
      const log = join(dir, 'cancel.log')
      process.env.MCP_SPEC_LOG = log
      const client = await connect()
      try {
        const controller = new AbortController()
        const pending = client.callTool({ name: 'subagent', arguments: { description: 'wait', prompt: 'WAIT' } }, undefined, { signal: controller.signal })
        await eventually('the child is running', () => app.ctx.subagents.runs().length > 0)
        controller.abort(new Error('the user cancelled'))
        await pending.then(() => { throw new Error('expected the call to reject') }, (error: Error) => expect(error.message).to.match(/cancel/i))
        await eventually('the child was aborted', () => readLog(log).includes('aborted'))
        await eventually('no runs left', () => app.ctx.subagents.runs().length === 0)
      } finally {
        delete process.env.MCP_SPEC_LOG
        await client.close()
      }
    })

    it('our MCP client mounts the served tool over Streamable HTTP (url + headers) and delegates through it; a wrong token fails that load only, its secret not in the error', async () => {
      const errors: Error[] = []
      const stop = app.ctx.on('internal/error', (error) => { errors.push(error as Error) })
      const good = app.ctx.plugin(client, { name: 'served', url: app.ctx.mcpServe.url, headers: { Authorization: `Bearer ${app.ctx.mcpServe.token}` } })
      const bad = app.ctx.plugin(client, { name: 'wrong', url: app.ctx.mcpServe.url, headers: { Authorization: 'Bearer wrong-secret-value-123456' } })
      try {
        await eventually('served__subagent mounted', () => app.ctx.tools.has('served__subagent'), 20_000)
        const result = await app.ctx.tools.view().execute({ name: 'served__subagent', input: { description: 'echo', prompt: 'ECHO over http' } }, {
          signal: new AbortController().signal, agent: { id: 'spec', depth: 0 }, toolCallId: 'spec-1',
        })
        expect(result).to.deep.equal({ content: 'child says over http' })
        await eventually('the wrong-token load failed', () => errors.some((e) => (e as { code?: string }).code === 'MCP_CONNECT_FAILED'), 20_000)
        const failed = errors.find((e) => (e as { code?: string }).code === 'MCP_CONNECT_FAILED')!
        expect(failed.message, failed.message).to.match(/Error POSTing to endpoint.*bearer/).and.not.include('wrong-secret-value-123456')
        expect(app.ctx.tools.has('wrong__subagent')).to.equal(false)
      } finally {
        good.dispose()
        bad.dispose()
        stop()
      }
      expect(app.ctx.tools.has('served__subagent')).to.equal(false)
    })

    const raw = (headers: Record<string, string>, body = '{}') => new Promise<number>((resolve, reject) => {
      const url = new URL(app.ctx.mcpServe.url)
      const req = request({ host: '127.0.0.1', port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
        res.resume()
        resolve(res.statusCode!)
      })
      req.on('error', reject)
      req.end(body)
    })

    it('refuses hostile callers: no token, a wrong token, a foreign Host, a foreign Origin, an oversized body', async () => {
      const token = `Bearer ${app.ctx.mcpServe.token}`
      const host = new URL(app.ctx.mcpServe.url).host
      expect(await raw({ host })).to.equal(401)
      expect(await raw({ host, authorization: 'Bearer wrong' })).to.equal(401)
      expect(await raw({ host: `evil.example:${new URL(app.ctx.mcpServe.url).port}`, authorization: token })).to.equal(403)
      expect(await raw({ host, authorization: token, origin: 'http://evil.example' })).to.equal(403)
      expect(await raw({ host, authorization: token }, JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024) }))).to.equal(413)
      expect(await raw({ host, authorization: token })).to.equal(400)
      await connect('wrong').then(() => { throw new Error('expected a refusal') }, (error: Error) => expect(error.message).to.match(/401|token/i))
    })
  })

  it('unloading a server entry removes its tools and reaps its process', async () => {
    const pid = childPid('server-everything')
    expect(alive(pid)).to.equal(true)
    const entry = [...app.loader.entries()].find((e) => e.options.id === 'every')!
    entry.options.disabled = true
    await entry.refresh()
    expect(app.ctx.tools.has('every__echo')).to.equal(false)
    await eventually('the server-everything process is reaped', () => !alive(pid))
    expect(app.ctx.tools.has('files__read_text_file')).to.equal(true)
  })
})
