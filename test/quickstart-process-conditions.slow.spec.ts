// The quick start CLI (from source) when its output's reader goes away, its terminal closes, or its command line or
// config file is wrong: it ends on its own terms (no stack, no native abort) and leaves no child behind.
import { execFile, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { expect } from 'chai'
import { acpAgentProcesses, alive, eventually, offlineEnv, QUICKSTART, ROOT } from './helpers.js'

const SOURCE = ['--import', 'tsx', '--conditions=cordis-subagents-source', '--no-experimental-require-module', join(QUICKSTART, 'src/cli.ts')]
const HANGUP = fileURLToPath(new URL('./fixtures/quickstart/hangup-pty.py', import.meta.url))

/** Runs the CLI from source with stdin closed: its exit code and stderr. */
function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const options = { cwd: ROOT, env: offlineEnv(), timeout: 60_000 }
    const child = execFile(process.execPath, [...SOURCE, ...args], options, (_e, _out, stderr) => resolve({ code: child.exitCode, stderr }))
    child.stdin?.end()
  })
}

describe('quick start CLI: process conditions', function () {
  this.timeout(90_000)

  it('stdout closed mid-run (`| head`): exits 0 without a stack, children stopped', async () => {
    const child = spawn(process.execPath, [...SOURCE], { cwd: ROOT, env: offlineEnv({ QUICKSTART_DEMO_DELAY: '300' }), stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    let stdout = ''
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    try {
      // As `| head -n …` does: read until the ACP child runs, then close the pipe.
      await new Promise<void>((resolve) => child.stdout.on('data', (chunk) => {
        stdout += chunk
        if (/subagent_acp → acp: .* started/.test(stdout)) resolve()
      }))
      child.stdout.destroy()
      expect(await exited, stderr).to.equal(0)
      expect(stderr).to.not.match(/EPIPE|\n\s+at /)
      expect(await eventually(() => acpAgentProcesses().length === 0, 15_000), acpAgentProcesses().join('\n')).to.equal(true)
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL')
    }
  })

  it('terminal closed during an interactive turn: no native abort, no child left', async () => {
    const env = offlineEnv({ QUICKSTART_DEMO_DELAY: '1500', TERM: 'xterm' })
    const out = await new Promise<string>((resolve) => {
      execFile('python3', [HANGUP, process.execPath, ...SOURCE, '--interactive'], { cwd: ROOT, env, timeout: 120_000 }, (_e, stdout) => resolve(stdout))
    })
    const status = out.match(/status (\w+) ?(\d*)/)
    expect(status, out).to.not.equal(null)
    // Before the fix: killed by SIGABRT (6) or SIGSEGV (11), Node's ResetStdio assertion on the dead terminal.
    expect(status![1] === 'exit' || status![2] === '1', out).to.equal(true)
    const pids = [...out.matchAll(/^pid (\d+)$/gm)].map((match) => Number(match[1]))
    expect(pids.length, out).to.be.above(0)
    expect(await eventually(() => pids.every((pid) => !alive(pid)), 15_000), out).to.equal(true)
  })

  it('a missing config file: one line, exit 2', async () => {
    const { code, stderr } = await run(['--config', join(ROOT, 'no-such-cordis.yml')])
    expect(code, stderr).to.equal(2)
    expect(stderr.trim().split('\n'), stderr).to.have.length(1)
    expect(stderr).to.match(/^quickstart: config file .*no-such-cordis\.yml does not exist/)
  })

  it('an unknown flag or a --config without a file: the usage line, exit 2', async () => {
    for (const args of [['--jsn'], ['--json', '--config']]) {
      const { code, stderr } = await run(args)
      expect(code, stderr).to.equal(2)
      expect(stderr).to.match(/^quickstart: (unknown option --jsn|--config needs a file name)/)
      expect(stderr).to.include('usage: npm start --')
    }
  })
})
