// The quick start CLI (from source) when its output's reader goes away, its terminal closes, or its command line or
// config file is wrong: it ends on its own terms (no stack, no native abort) and leaves no child behind.
import { execFile, spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pty from '@lydell/node-pty'
import { expect } from 'chai'
import { acpAgentProcesses, alive, eventually, offlineEnv, QUICKSTART, ROOT } from './helpers.js'

const SOURCE = ['--import', 'tsx', '--conditions=cordis-subagents-source', '--no-experimental-require-module', join(QUICKSTART, 'src/cli.ts')]

/** Every process under `root` now (from /proc: a parent's pid is the 4th field of `stat`, after the command in parentheses). */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(parent, [...children.get(parent) ?? [], Number(name)])
    } catch { /* gone meanwhile */ }
  }
  const found: number[] = []
  for (let todo = [root]; todo.length;) for (const child of children.get(todo.pop()!) ?? []) found.push(child), todo.push(child)
  return found
}

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
    const term = pty.spawn(process.execPath, [...SOURCE, '--interactive'], { cwd: ROOT, env, cols: 200, rows: 50, name: 'xterm' })
    let out = ''
    const seen = new Set<number>()
    term.onData((data) => {
      out += data
      for (const pid of descendants(term.pid)) seen.add(pid)
    })
    const exited = new Promise<{ exitCode: number; signal?: number }>((resolve) => term.onExit(resolve))
    try {
      expect(await eventually(() => /\n(?:\x1b\[[0-9;]*[A-Za-z])*> /.test(out), 30_000), out).to.equal(true)
      term.write('\r')
      expect(await eventually(() => /subagent_acp → acp: .* started/.test(out), 30_000), out).to.equal(true)
      for (const pid of descendants(term.pid)) seen.add(pid)
      // The terminal goes away as a closed window does: its master side is closed (reads then fail with EIO) and it hangs up.
      ;(term as unknown as { destroy(): void }).destroy()
      const { exitCode, signal } = await exited
      // Before the fix: killed by SIGABRT (6) or SIGSEGV (11), Node's ResetStdio assertion on the dead terminal.
      expect(signal === undefined || signal === 0 || signal === 1, `exit ${exitCode}, signal ${signal}\n${out}`).to.equal(true)
      expect(seen.size, out).to.be.above(0)
      expect(await eventually(() => [...seen].every((pid) => !alive(pid)), 15_000), [...seen].join(' ')).to.equal(true)
    } finally {
      try { term.kill('SIGKILL') } catch { /* gone */ }
    }
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
