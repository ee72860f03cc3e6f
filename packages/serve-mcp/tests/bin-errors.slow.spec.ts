/// <reference types="mocha" />
// The cordis-subagents-mcp bin fails loudly: a usage error, a config file that is missing, not a file or
// unreadable (exit 2), and an app that does not serve MCP (a plugin, its config or the MCP SDK failing
// to load; exit 1) each end the process with one line on stderr naming the file and what to do, while
// stdin stays open (an MCP client waits on it). stdout carries nothing but MCP messages.
import { execFileSync, spawn } from 'node:child_process'
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { CORE_ENTRIES, tempDir } from './helpers.js'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const SOURCE = fileURLToPath(new URL('../src/bin.ts', import.meta.url))
const LAUNCHER = fileURLToPath(new URL('../bin/cordis-subagents-mcp.js', import.meta.url))
const NO_SDK = fileURLToPath(new URL('./fixtures/no-mcp-sdk.mjs', import.meta.url))
// An absolute --import: a case runs the bin from an empty folder, where `tsx` would not resolve.
const TSX = import.meta.resolve('tsx')
const NOBODY = 65534

interface Run { code: number | null; stdout: string; stderr: string }

/** Runs the source bin (or `program`) with stdin left open; the process must end by itself (killed after 40 s). */
function run(args: string[], options: { cwd?: string; imports?: string[]; program?: string; uid?: number } = {}): Promise<Run> {
  const program = options.program ?? SOURCE
  // The source bin runs through tsx on the packages' src; the built launcher as a user runs it, on the packages' lib.
  const preload = program === SOURCE
    ? ['--import', TSX, ...(options.imports ?? []).flatMap((file) => ['--import', file]), '--conditions', 'cordis-subagents-source']
    : []
  const child = spawn(process.execPath, [...preload, '--no-experimental-require-module', program, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    stdio: ['pipe', 'pipe', 'pipe'],
    ...options.uid === undefined ? {} : { uid: options.uid, gid: options.uid },
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => { stdout += chunk })
  child.stderr.on('data', (chunk) => { stderr += chunk })
  const guard = setTimeout(() => child.kill('SIGKILL'), 40_000)
  return new Promise((resolve) => child.once('close', (code) => {
    clearTimeout(guard)
    child.stdin.destroy()
    resolve({ code, stdout, stderr })
  }))
}

/** The bin's own lines on stderr (cordis' log lines start with `[`; stack frames with `at`). */
const ownLines = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('cordis-subagents-mcp: '))

/** A config serving `tools` over stdio, after the core entries and `extra`. */
function config(serve: string, extra = ''): string {
  return `${CORE_ENTRIES}\n${extra}- id: serve\n  name: '@cordis-subagents/serve-mcp'\n  config:\n${serve.replace(/^/gm, '    ')}\n`
}

describe('cordis-subagents-mcp: usage and config errors fail loudly', function () {
  this.timeout(60_000)
  let dir: string

  beforeEach(() => { dir = tempDir('mcp-bin-errors-') })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('--help: usage, the config, the environment and the exit codes on stderr; exit 0', async () => {
    const { code, stdout, stderr } = await run(['--help'])
    expect(code, stderr).to.equal(0)
    expect(stderr).to.match(/^usage: cordis-subagents-mcp \[config file\]/)
      .and.include('@cordis-subagents/serve-mcp').and.include('CORDIS_SUBAGENTS_MCP_VERBOSE').and.include('exit codes')
    expect(stdout).to.equal('')
  })

  it('an unknown option or two files: exit 2, one line saying so, then the usage', async () => {
    for (const [args, line] of [[['--bogus'], 'unknown option --bogus'], [['a.yml', 'b.yml'], 'give at most one config file']] as const) {
      const { code, stdout, stderr } = await run([...args])
      expect(code, stderr).to.equal(2)
      expect(stderr.split('\n')[0]).to.equal(`cordis-subagents-mcp: ${line}`)
      expect(stderr).to.include('usage: cordis-subagents-mcp')
      expect(stdout).to.equal('')
    }
  })

  it('a missing config file (named, or ./cordis.yml by default), or a folder: exit 2, one line naming it, no stack trace', async () => {
    const cases: Array<[string[], string, string]> = [
      [[join(dir, 'nope.yml')], join(dir, 'nope.yml'), 'does not exist'],
      [[], join(dir, 'cordis.yml'), 'does not exist'],
      [[dir], dir, 'is not a file'],
    ]
    for (const [args, file, problem] of cases) {
      const { code, stdout, stderr } = await run(args, { cwd: dir })
      expect(code, stderr).to.equal(2)
      expect(stderr).to.equal(`cordis-subagents-mcp: config file ${file} ${problem}: give the path of a cordis.yml that loads `
        + '@cordis-subagents/serve-mcp with transport: stdio (see --help)\n')
      expect(stdout).to.equal('')
    }
  })

  it('an unreadable config file: exit 2, one line naming it and the permission error', async function () {
    const file = join(dir, 'cordis.yml')
    writeFileSync(file, config('transport: stdio'))
    chmodSync(file, 0o000)
    // root reads any file: run the bin as nobody, who may enter the folder but not read the file.
    const root = process.getuid?.() === 0
    if (root) chmodSync(dir, 0o755)
    const { code, stdout, stderr } = await run([file], root ? { uid: NOBODY } : {})
    expect(code, stderr).to.equal(2)
    expect(stderr).to.equal(`cordis-subagents-mcp: config file ${file} cannot be read (EACCES): check its permissions and those of its folders `
      + 'for the user the client runs this as\n')
    expect(stdout).to.equal('')
  })

  it('the built launcher (bin/cordis-subagents-mcp.js → lib/bin.js) exits 2 on a missing file, one line', async () => {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', 'packages/serve-mcp'], { cwd: ROOT, stdio: 'pipe' })
    const { code, stdout, stderr } = await run([join(dir, 'nope.yml')], { program: LAUNCHER })
    expect(code, stderr).to.equal(2)
    expect(ownLines(stderr)).to.have.length(1)
    expect(stderr).to.match(/^cordis-subagents-mcp: config file .*nope\.yml does not exist: /)
    expect(stdout).to.equal('')
  })
})

describe('cordis-subagents-mcp: an app that does not serve MCP exits 1', function () {
  this.timeout(60_000)
  let dir: string

  beforeEach(() => { dir = tempDir('mcp-bin-noserve-') })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  /** Writes `yml`, runs the bin on it (stdin open) and checks the common shape: exit 1, one own line, clean stdout, file untouched. */
  async function notServed(yml: string, imports: string[] = []): Promise<string> {
    const file = join(dir, 'cordis.yml')
    writeFileSync(file, yml)
    const { code, stdout, stderr } = await run([file], { imports })
    expect(code, stderr).to.equal(1)
    const lines = ownLines(stderr)
    expect(lines, stderr).to.have.length(1)
    expect(lines[0]).to.match(new RegExp(`^cordis-subagents-mcp: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} does not serve MCP: `))
    expect(stdout).to.equal('')
    // The loader never writes the operator's file (it marks a failed entry disabled on some failures).
    expect(readFileSync(file, 'utf8')).to.equal(yml)
    return lines[0]
  }

  it('the serve entry\'s config is refused (tools: []): the config error is on the line', async () => {
    const line = await notServed(config('transport: stdio\ntools: []'))
    expect(line).to.include('no @cordis-subagents/serve-mcp entry with transport: stdio was applied')
      .and.include('First error: serve-mcp: tools must name at least one tool to serve')
  })

  it('a plugin the server needs does not load (the agent runtime\'s package is misspelled)', async () => {
    const yml = config('transport: stdio').replace(`name: '@cordis-subagents/agent'`, `name: '@cordis-subagents/agentz'`)
    const line = await notServed(yml)
    expect(line).to.include('was applied. First error: Cannot find package "@cordis-subagents/agentz"')
  })

  it('the MCP SDK cannot load', async () => {
    const line = await notServed(config('transport: stdio\ntools: [subagent]'), [NO_SDK])
    expect(line).to.include('the MCP SDK failed to load').and.include('@modelcontextprotocol/sdk')
  })

  it('the file serves MCP over HTTP only (no stdio entry)', async () => {
    const line = await notServed(config('transport: http'))
    expect(line).to.include('no @cordis-subagents/serve-mcp entry with transport: stdio was applied')
  })
})

describe('cordis-subagents-mcp: stdout carries only MCP messages', function () {
  this.timeout(60_000)
  let dir: string

  before(() => { dir = tempDir('mcp-bin-stdout-') })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('a plugin writing to stdout goes to stderr; initialize is answered; SIGTERM stops the app with 143', async () => {
    const noisy = join(dir, 'noisy.mjs')
    writeFileSync(noisy, 'export const name = "noisy"\nexport function apply() { console.log("NOISE on console.log"); process.stdout.write("NOISE on stdout\\n") }\n')
    mkdirSync(join(dir, 'app'))
    const file = join(dir, 'app', 'cordis.yml')
    writeFileSync(file, config('transport: stdio\ntools: [subagent]', `- id: noisy\n  name: ${JSON.stringify(noisy)}\n`))
    const child = spawn(process.execPath, ['--import', TSX, '--conditions', 'cordis-subagents-source', '--no-experimental-require-module', SOURCE, file], {
      cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }, stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
    const guard = setTimeout(() => child.kill('SIGKILL'), 40_000)
    const answered = new Promise<void>((resolve) => child.stdout.on('data', (chunk) => {
      stdout += chunk
      if (stdout.includes('"id":1')) resolve()
    }))
    child.stdin.write(`${JSON.stringify({
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'spec', version: '1.0.0' } },
    })}\n`)
    await Promise.race([answered, exited])
    child.kill('SIGTERM')
    const code = await exited
    clearTimeout(guard)
    expect(stderr).to.include('NOISE on console.log').and.include('NOISE on stdout')
    const lines = stdout.split('\n').filter(Boolean)
    expect(lines.length, stdout).to.be.greaterThan(0)
    for (const line of lines) expect(JSON.parse(line), line).to.have.property('jsonrpc', '2.0')
    expect(JSON.parse(lines[0]).result.serverInfo.name).to.equal('cordis-subagents')
    expect(code, stderr).to.equal(143)
    expect(stderr).not.to.match(/^\s+at /m)
  })
})
