/// <reference types="mocha" />
// The cordis-subagents-mcp bin when its client or terminal goes away: stdout's reader gone (EPIPE), stderr closed by
// the parent, SIGHUP (the terminal closed). Each stops the app the graceful way (a stdio MCP server the app runs, one
// that outlives its stdin, is reaped), with no unhandled error and no stack. And CORDIS_SUBAGENTS_MCP_VERBOSE=0 means
// no debug logs. Driven by raw JSON-RPC lines over the bin's pipes (a real subprocess, run from src through tsx).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { CORE_ENTRIES, alive, eventually, readLog, tempDir } from './helpers.js'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const BIN = fileURLToPath(new URL('../src/bin.ts', import.meta.url))
// The mcp package's fixture server; FIXTURE_STAY=1 keeps it alive after its stdin closes (as servers with a poller do).
const STUB = fileURLToPath(new URL('../../mcp/tests/fixtures/server.mjs', import.meta.url))
const NOISY = fileURLToPath(new URL('./fixtures/noisy-tool.ts', import.meta.url))

function config(stubLog: string): string {
  return `${CORE_ENTRIES}
- id: stub
  name: '@cordis-subagents/mcp'
  config:
    name: stub
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(STUB)}, ${JSON.stringify(stubLog)}]
    env: { FIXTURE_STAY: '1' }
    killGrace: 300
- id: noisy
  name: ${JSON.stringify(NOISY)}
- id: serve
  name: '@cordis-subagents/serve-mcp'
  config:
    transport: stdio
    tools: [stub__echo, noisy]
`
}

interface Bin {
  child: ChildProcessWithoutNullStreams
  stderr: () => string
  request: (method: string, params?: object) => Promise<{ result?: unknown; error?: unknown }>
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

const EXIT_WAIT = 30_000

describe('cordis-subagents-mcp: the client or the terminal goes away', function () {
  this.timeout(120_000)
  let dir: string
  let stubLog: string
  let bins: Bin[] = []

  beforeEach(() => {
    dir = tempDir('mcp-bin-hangups-')
    stubLog = join(dir, 'stub.log')
    writeFileSync(join(dir, 'cordis.yml'), config(stubLog))
  })

  afterEach(() => {
    for (const { child } of bins) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    bins = []
    const match = /pid (\d+)/.exec(readLog(stubLog))
    if (match && alive(Number(match[1]))) process.kill(Number(match[1]), 'SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  /** Starts the bin and waits until the stub server's tool is served. */
  async function start(verbose?: string): Promise<Bin> {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }
    if (verbose !== undefined) env.CORDIS_SUBAGENTS_MCP_VERBOSE = verbose
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'cordis-subagents-source', '--no-experimental-require-module',
      BIN, join(dir, 'cordis.yml')], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stderr = ''
    let buffer = ''
    let id = 0
    const pending = new Map<number, (message: { result?: unknown; error?: unknown }) => void>()
    child.stderr.on('data', (chunk) => { stderr += chunk })
    child.stderr.on('error', () => {})
    child.stdout.on('error', () => {})
    child.stdin.on('error', () => {})
    child.stdout.on('data', (chunk) => {
      buffer += chunk
      for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
        const message = JSON.parse(buffer.slice(0, at)) as { id?: number; result?: unknown; error?: unknown }
        buffer = buffer.slice(at + 1)
        if (message.id !== undefined) pending.get(message.id)?.(message)
      }
    })
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }))
    })
    type Answer = { result?: unknown; error?: unknown }
    const request = (method: string, params: object = {}) => new Promise<Answer>((resolve, reject) => {
      const key = ++id
      const timer = setTimeout(() => reject(new Error(`no answer to ${method}; stderr:\n${stderr}`)), 60_000)
      pending.set(key, (message) => { clearTimeout(timer); resolve(message) })
      void exited.then((end) => {
        clearTimeout(timer)
        reject(new Error(`the bin exited (${JSON.stringify(end)}) before answering ${method}:\n${stderr}`))
      })
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: key, method, params })}\n`)
    })
    const bin = { child, stderr: () => stderr, request, exited }
    bins.push(bin)
    await request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'spec', version: '1' } })
    child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    const served = async () => JSON.stringify((await request('tools/list')).result).includes('stub__echo')
    await eventually('the stub server\'s tool is served', served, 60_000)
    return bin
  }

  function stubPid(): number {
    const match = /pid (\d+)/.exec(readLog(stubLog))
    expect(match, 'the stub MCP server logged its pid').to.not.equal(null)
    return Number(match![1])
  }

  async function exitOf(bin: Bin) {
    const timeout = new Promise<'still running'>((resolve) => { setTimeout(() => resolve('still running'), EXIT_WAIT).unref() })
    return Promise.race([bin.exited, timeout])
  }

  it('stdout\'s reader gone (EPIPE): stops like a closed stdin, exit 0, no stack, the stub reaped; VERBOSE=0: no debug', async () => {
    const bin = await start('0')
    const pid = stubPid()
    bin.child.stdout.destroy()
    for (let i = 0; i < 3; i++) bin.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 100 + i, method: 'tools/list' })}\n`)
    expect(await exitOf(bin), bin.stderr()).to.deep.equal({ code: 0, signal: null })
    expect(bin.stderr()).to.not.match(/EPIPE|Unhandled|^\s+at /m)
    expect(bin.stderr(), 'CORDIS_SUBAGENTS_MCP_VERBOSE=0 logs no debug line').to.not.match(/^\[D\]/m)
    await eventually('the stub MCP server is gone', () => !alive(pid), 15_000)
  })

  it('stderr closed by the parent: still serves after log lines (lost quietly), exit 0 when stdin closes', async () => {
    const bin = await start('1')
    const pid = stubPid()
    bin.child.stderr.destroy()
    // Each call logs 4 KiB into the closed stderr.
    for (let i = 0; i < 3; i++) {
      expect(JSON.stringify((await bin.request('tools/call', { name: 'noisy', arguments: {} })).result)).to.include('ok')
      await new Promise((resolve) => setTimeout(resolve, 300))
    }
    const echo = await bin.request('tools/call', { name: 'stub__echo', arguments: { text: 'hi' } })
    expect(JSON.stringify(echo.result)).to.include('hi')
    expect(bin.child.exitCode).to.equal(null)
    bin.child.stdin.end()
    expect(await exitOf(bin)).to.deep.equal({ code: 0, signal: null })
    await eventually('the stub MCP server is gone', () => !alive(pid), 15_000)
  })

  it('CORDIS_SUBAGENTS_MCP_VERBOSE=false: no debug line (only 1, true, yes, on turn them on)', async () => {
    const bin = await start('false')
    bin.child.stdin.end()
    expect(await exitOf(bin)).to.deep.equal({ code: 0, signal: null })
    expect(bin.stderr()).to.not.match(/^\[D\]/m)
  })

  it('SIGHUP (the terminal closed): stops like SIGTERM, exit 129, the stub MCP server reaped, not orphaned', async () => {
    const bin = await start('1')
    const pid = stubPid()
    expect(bin.stderr(), 'CORDIS_SUBAGENTS_MCP_VERBOSE=1 logs debug lines').to.match(/^\[D\]/m)
    bin.child.kill('SIGHUP')
    expect(await exitOf(bin), bin.stderr()).to.deep.equal({ code: 129, signal: null })
    await eventually('the stub MCP server is gone', () => !alive(pid), 15_000)
  })
})
