/// <reference types="mocha" />
// The cordis-subagents-mcp bin: a cordis app from a cordis.yml serving delegation over stdio, driven
// by the SDK's own client (a real subprocess; run from src through tsx, as the tests run).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { CORE_ENTRIES, alive, eventually, readLog } from './helpers.js'

const BIN = fileURLToPath(new URL('../src/bin.ts', import.meta.url))

const CONFIG = `
${CORE_ENTRIES}
- id: spawn
  name: '@cordis-subagents/provider-spawn'
- id: tool-subagent
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: spawn
- id: slow
  name: ${JSON.stringify(fileURLToPath(new URL('./fixtures/slow-tool.ts', import.meta.url)))}
- id: serve
  name: '@cordis-subagents/serve-mcp'
  config:
    transport: stdio
    tools: [subagent, slow]
`

function spawnOptions(dir: string, log: string) {
  return {
    command: process.execPath,
    args: ['--import', 'tsx', '--conditions', 'cordis-subagents-source', '--no-experimental-require-module', BIN, join(dir, 'cordis.yml')],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', MCP_SPEC_LOG: log },
    cwd: fileURLToPath(new URL('../../..', import.meta.url)),
    stderr: 'pipe' as const,
  }
}

describe('cordis-subagents-mcp (stdio bin) driven by the SDK client', function () {
  this.timeout(60_000)
  let dir: string
  let log: string
  let client: Client
  let transport: StdioClientTransport
  let stderr = ''

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mcp-bin-'))
    log = join(dir, 'model.log')
    writeFileSync(join(dir, 'cordis.yml'), CONFIG)
    transport = new StdioClientTransport(spawnOptions(dir, log))
    transport.stderr?.on('data', (chunk) => { stderr += chunk })
    client = new Client({ name: 'spec', version: '1.0.0' })
    await client.connect(transport, { timeout: 50_000 })
  })

  after(async () => {
    await client?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('lists the served delegation tool and delegates a task to a spawn child', async () => {
    await eventually('the subagent tool is served', async () => (await client.listTools()).tools.some((t) => t.name === 'subagent'), 30_000)
    const result = await client.callTool({ name: 'subagent', arguments: { description: 'echo', prompt: 'ECHO hi from stdio' } })
    expect(result.content, stderr).to.deep.equal([{ type: 'text', text: 'child says hi from stdio' }])
  })

  it('a cancel (notifications/cancelled) reaches the child; closing stdin stops the app and its process exits', async () => {
    const controller = new AbortController()
    const pending = client.callTool({ name: 'subagent', arguments: { description: 'wait', prompt: 'WAIT' } }, undefined, { signal: controller.signal })
    pending.catch(() => {})
    await eventually('the child is waiting', () => readLog(log).includes('waiting'), 20_000)
    controller.abort(new Error('the user cancelled'))
    await pending.then(() => { throw new Error('expected the call to reject') }, (error: Error) => expect(error.message).to.match(/cancel/i))
    await eventually('the child was aborted', () => readLog(log).includes('aborted'), 20_000)
    const pid = transport.pid!
    await client.close()
    await eventually('the bin exited', () => !alive(pid), 20_000)
  })

  it('closing stdin while a delegation runs: the bin exits only after its served call wound down', async () => {
    const second = new StdioClientTransport({ ...spawnOptions(dir, log) })
    const other = new Client({ name: 'spec', version: '1.0.0' })
    await other.connect(second, { timeout: 50_000 })
    await eventually('the slow tool is served', async () => (await other.listTools()).tools.some((t) => t.name === 'slow'), 30_000)
    other.callTool({ name: 'slow', arguments: {} }).catch(() => {})
    await eventually('the served call runs', () => readLog(log).includes('slow waiting'), 20_000)
    const pid = second.pid!
    await other.close()
    await eventually('the bin exited', () => !alive(pid), 20_000)
    const exited = Date.now()
    expect(readLog(log), 'the call wound down before the bin exited').to.match(/slow wound down at (\d+)/)
    expect(Number(/slow wound down at (\d+)/.exec(readLog(log))![1])).to.be.below(exited)
  })
})
