// The bin when the process's surroundings go: the client closes its end of stdout mid-turn (EPIPE), the parent closes
// its end of stderr, SIGHUP, and a signal while the app still starts. Each stops the app the graceful way (the running
// turn written, the app's stdio MCP servers stopped) and exits 0: before, the first two crashed on an unhandled
// 'error' (exit 1, a stack), SIGHUP killed the bin and left its MCP servers running, and a signal during startup was
// ignored until the startup bound (30 s). The bin runs from source, as the client starts it: stdio are its pipes.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import { appYml, ROOT } from './helpers.js'

const BIN_SOURCE = fileURLToPath(new URL('../src/bin.ts', import.meta.url))
const FLAGS = ['--import', 'tsx', '--conditions=cordis-subagents-source', '--no-experimental-require-module']
const NOISY = fileURLToPath(new URL('./fixtures/noisy-tool.mjs', import.meta.url))
const MCP_SERVER = join(ROOT, 'packages/mcp/tests/fixtures/server.mjs')
/** Generous bound for an exit on a loaded machine; the old code took 30 s (startup) or never exited gracefully. */
const EXIT_MS = 15_000

interface Bin {
  child: ChildProcess
  stderr(): string
  /** Exit code, or `signal:<name>`, or 'running' after `ms`. */
  exit(ms?: number): Promise<number | string>
  send(message: object): void
  request(method: string, params: object): Promise<any>
}

function startBin(config: string): Bin {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('SUBAGENT_') && key !== 'TRACEPARENT'))
  const child = spawn(process.execPath, [...FLAGS, BIN_SOURCE, config], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] })
  let err = ''
  child.stderr!.on('data', (chunk) => { err += chunk })
  child.stderr!.on('error', () => {})
  child.stdin!.on('error', () => {})
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? `signal:${signal}`)))
  const pending = new Map<number, (message: any) => void>()
  let buffer = ''
  child.stdout!.on('data', (chunk) => {
    buffer += chunk
    for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
      const message = JSON.parse(buffer.slice(0, at))
      buffer = buffer.slice(at + 1)
      if (message.id !== undefined) pending.get(message.id)?.(message)
    }
  })
  let id = 0
  const send = (message: object) => { child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`) }
  return {
    child, send,
    stderr: () => err,
    async exit(ms = EXIT_MS) {
      let timer: NodeJS.Timeout | undefined
      const code = await Promise.race([exited, new Promise<string>((resolve) => { timer = setTimeout(() => resolve('running'), ms) })])
      clearTimeout(timer)
      return code
    },
    request(method, params) {
      const key = ++id
      send({ id: key, method, params })
      // A bin that died answers nothing: the request settles with its exit instead of hanging the spec.
      return Promise.race([new Promise((resolve) => pending.set(key, resolve)), exited.then((code) => ({ exited: code }))])
    },
  }
}

/** Pids of the processes whose command line holds `marker`. */
function processesMatching(marker: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) pids.push(Number(entry))
    } catch {}
  }
  return pids
}

describe('cordis-subagents-acp: the client, the parent or the terminal going away', function () {
  this.timeout(90_000)
  let dir: string
  let bin: Bin | undefined
  let marker: string | undefined
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'serve-acp-bin-')) })
  afterEach(async () => {
    if (bin && bin.child.exitCode === null && bin.child.signalCode === null) {
      bin.child.kill('SIGKILL')
      await bin.exit()
    }
    // Only what this spec started: the processes carrying this test's own marker.
    for (const pid of marker ? processesMatching(marker) : []) try { process.kill(pid, 'SIGKILL') } catch {}
    bin = marker = undefined
    rmSync(dir, { recursive: true, force: true })
  })
  const file = (name: string, text: string) => {
    const path = join(dir, name)
    writeFileSync(path, text)
    return path
  }
  const init = (served: Bin) => served.request('initialize', { protocolVersion: 1, clientCapabilities: {} })

  it('the client closes its end of stdout mid-turn: the app stops, the running turn is stored, exit 0 without a stack', async () => {
    const store = join(dir, 'store')
    bin = startBin(file('app.yml', appYml({ parts: 'delayMs: 60000', serve: `store: ${JSON.stringify(store)}` })))
    await init(bin)
    const { result: { sessionId } } = await bin.request('session/new', { cwd: dir, mcpServers: [] })
    const first = await bin.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'first turn' }] })
    expect(first.result.stopReason).to.equal('end_turn')
    // A turn whose model waits 60 s, then the client closes its end of stdout; the next answer hits the broken pipe.
    bin.send({ id: 50, method: 'session/prompt', params: { sessionId, prompt: [{ type: 'text', text: 'slow turn still running' }] } })
    await new Promise((resolve) => setTimeout(resolve, 1000))
    bin.child.stdout!.destroy()
    bin.send({ id: 51, method: 'session/list', params: {} })
    expect(await bin.exit(), bin.stderr()).to.equal(0)
    expect(bin.stderr()).to.include('stopping (the ACP client closed stdout)')
    expect(bin.stderr()).not.to.match(/EPIPE|^\s+at /m)
    const stored = readdirSync(store).map((name) => readFileSync(join(store, name), 'utf8')).join('\n')
    expect(stored).to.include('first turn').and.include('slow turn still running')
  })

  it('the parent closes its end of stderr: log lines are dropped, a prompt is still answered, the stop exits 0', async () => {
    bin = startBin(file('app.yml', appYml({ extra: `- id: noisy\n  name: ${JSON.stringify(NOISY)}` })))
    await init(bin)
    const { result: { sessionId } } = await bin.request('session/new', { cwd: dir, mcpServers: [] })
    bin.child.stderr!.destroy()
    // The tool logs 4 KiB to stderr (a broken pipe now), then the stop writes its own line.
    const answer = await bin.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'call noisy {}' }] })
    expect(answer.result?.stopReason, JSON.stringify(answer)).to.equal('end_turn')
    const again = await bin.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'call noisy {}' }] })
    expect(again.result?.stopReason, JSON.stringify(again)).to.equal('end_turn')
    bin.child.stdin!.end()
    expect(await bin.exit()).to.equal(0)
  })

  it('SIGHUP: the app stops as on SIGTERM (exit 0), its stdio MCP server is stopped, not orphaned', async () => {
    marker = `serve-acp-sighup-${process.pid}-${Date.now()}`
    // An MCP server that does not exit when its stdin closes (a timer keeps it alive), as servers with a poller do.
    const stubborn = file('stubborn-mcp.mjs', `setInterval(() => {}, 1000)\nawait import(${JSON.stringify(MCP_SERVER)})\n`)
    const mcp = `- id: mcp-stubborn
  name: '@cordis-subagents/mcp'
  config:
    name: stub
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(stubborn)}, ${JSON.stringify(join(dir, 'mcp.log'))}, ${JSON.stringify(marker)}]`
    bin = startBin(file('app.yml', appYml({ extra: mcp })))
    await init(bin)
    await eventually(() => processesMatching(marker!).length > 0, 'the MCP server started', { timeout: EXIT_MS, every: 200 })
    bin.child.kill('SIGHUP')
    expect(await bin.exit(), bin.stderr()).to.equal(0)
    // Served, though the bin may still wait for the MCP entry to settle: either stop is the graceful one.
    expect(bin.stderr()).to.match(/stopping (while starting )?\(SIGHUP\)/)
    await eventually(() => processesMatching(marker!).length === 0, 'the MCP server stopped', { timeout: EXIT_MS, every: 200 })
  })

  it('SIGTERM while the app still starts (an entry whose import never ends): the app stops at once, exit 0', async () => {
    const never = file('never.mjs', [
      'console.error("never-loads: importing")', 'await new Promise(() => {})', 'export default { name: "never", apply() {} }', '',
    ].join('\n'))
    bin = startBin(file('app.yml', appYml({ extra: `- id: never\n  name: ${JSON.stringify(never)}` })))
    await eventually(() => bin!.stderr().includes('never-loads: importing'), 'the app started loading', { timeout: 30_000, every: 100 })
    bin.child.kill('SIGTERM')
    // The startup bound is 30 s: the old bin exited only after it.
    expect(await bin.exit(), bin.stderr()).to.equal(0)
    expect(bin.stderr()).to.include('stopping while starting (SIGTERM)')
  })
})
