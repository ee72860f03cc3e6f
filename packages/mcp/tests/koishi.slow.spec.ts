/// <reference types="mocha" />
// packages/mcp/examples/koishi.yml loaded by Koishi's own loader (`koishi start`), with the OpenAI
// model swapped for a scripted one (offline): the MCP server's tools reach a spawn child, the
// served endpoint listens on loopback, and the worker exits by itself once the app stops.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const EXAMPLE = fileURLToPath(new URL('../examples/koishi.yml', import.meta.url))
const PROBE = fileURLToPath(new URL('./fixtures/koishi-probe.cjs', import.meta.url))

/** server-filesystem processes whose working directory is `dir` (the example runs it with cwd = the project). */
function serversIn(dir: string): string[] {
  const lines = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n').filter((l) => l.includes('server-filesystem/dist/index.js'))
  return lines.filter((line) => {
    try {
      return readlinkSync(`/proc/${line.trim().split(/\s+/)[0]}/cwd`) === dir
    } catch {
      return false
    }
  })
}

interface Run { code: number | null; stdout: string; stderr: string }

function koishiStart(cwd: string, guard: number): Promise<Run> {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('OPENAI_') && !key.startsWith('KOISHI_') && key !== 'NODE_OPTIONS' && !key.startsWith('SUBAGENT_')) env[key] = value
  }
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, 'node_modules/koishi/lib/cli/index.js'), 'start', 'koishi.yml'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => { stdout += chunk })
  child.stderr!.on('data', (chunk) => { stderr += chunk })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`koishi start did not exit within ${guard} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`))
    }, guard)
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }) })
  })
}

describe('packages/mcp/examples/koishi.yml under `koishi start`', function () {
  this.timeout(60_000)
  let project: string
  let run: Run

  before(async () => {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', 'packages/mcp', 'packages/subagent-tool', 'packages/provider-spawn'], { cwd: ROOT, stdio: 'pipe' })
    project = mkdtempSync(join(tmpdir(), 'mcp-koishi-'))
    const example = readFileSync(EXAMPLE, 'utf8')
    const offline = example
      .replace('    model: openai\n', '    model: scripted\n')
      .replace('  ./node_modules/@cordis-subagents/model-openai:openai: {}\n', '')
      .concat('  ./koishi-probe.cjs:probe: {}\n')
    expect(offline.match(/openai/g) ?? []).to.deep.equal([])
    writeFileSync(join(project, 'koishi.yml'), offline)
    writeFileSync(join(project, 'hello.txt'), 'hello from koishi')
    copyFileSync(PROBE, join(project, 'koishi-probe.cjs'))
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir')
    run = await koishiStart(project, 50_000)
  })

  after(() => {
    if (project) rmSync(project, { recursive: true, force: true })
  })

  it('mounts the filesystem server\'s read tools, serves on loopback, delegates a file read; SIGTERM leaves no MCP server behind', async () => {
    const line = run.stdout.split('\n').find((l) => l.startsWith('RESULT '))
    expect(line, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).to.be.a('string')
    const result = JSON.parse(line!.slice('RESULT '.length))
    expect(result.error).to.equal(undefined)
    expect(result.text).to.equal('parent got: child read: hello from koishi')
    expect(result.tools).to.include.members(['subagent', 'files__read_text_file']).and.not.include('files__write_file')
    expect(result.servers).to.deep.equal(['files'])
    expect(result.url).to.equal('http://127.0.0.1:7331/mcp')
    expect(`${run.stdout}\n${run.stderr}`).to.not.match(/\[E\]|cannot resolve plugin/)
    expect(run.stdout).to.include('terminated by SIGTERM')
    // The worker exited without unloading; the server's process group went with it.
    const deadline = Date.now() + 10_000
    let left: string[] = []
    do {
      left = serversIn(realpathSync(project))
      if (!left.length) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    } while (Date.now() < deadline)
    expect(left).to.deep.equal([])
  })
})
