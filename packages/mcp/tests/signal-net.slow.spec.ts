/// <reference types="mocha" />
// A host killed by a signal nobody handles (SIGHUP: the terminal closed) runs no `exit` handler: the stdio servers'
// process groups (detached) must still go down with it. Beside another package's groups on the same net (shared's
// killWithHost: provider-acp's agents) both go and the signal is not swallowed; beside an owner of the signal (a graceful
// shutdown) the net stays out of its way.
import { spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { alive, eventually, fixturePid, tempDir } from './helpers.js'

const HOST = fileURLToPath(new URL('./fixtures/signal-host.ts', import.meta.url))

interface Ended { code: number | null; signal: NodeJS.Signals | null; stdout: string }

describe('@cordis-subagents/mcp: stdio servers when the host dies by a signal', function () {
  this.timeout(90_000)
  let dir: string
  let logFile: string
  let kill = () => {}

  beforeEach(() => {
    dir = tempDir('mcp-signal-')
    logFile = join(dir, 'server.log')
  })

  afterEach(() => {
    kill()
    try {
      process.kill(fixturePid(logFile), 'SIGKILL')
    } catch {
      // gone, as it should be
    }
    rmSync(dir, { recursive: true, force: true })
  })

  /** Starts the host, sends SIGHUP once its server is mounted; resolves when the host ended (SIGKILLed after 30 s). */
  async function hangUp(mode: string): Promise<Ended> {
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'cordis-subagents-source', '--no-experimental-require-module',
      HOST, logFile, mode], { stdio: ['ignore', 'pipe', 'inherit'] })
    kill = () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') }
    let stdout = ''
    child.stdout.on('data', (chunk) => { stdout += chunk })
    const ended = new Promise<Ended>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, stdout })))
    await eventually('the server is mounted', () => stdout.includes('mounted'), 40_000)
    expect(stdout).to.equal('mounted true groups 1\n')
    child.kill('SIGHUP')
    const guard = setTimeout(kill, 30_000)
    const result = await ended
    clearTimeout(guard)
    return result
  }

  it('alone: the host still dies by SIGHUP, and its server goes with it', async () => {
    const ended = await hangUp('alone')
    expect(ended.signal).to.equal('SIGHUP')
    const server = fixturePid(logFile)
    await eventually('the orphaned server is gone', () => !alive(server), 15_000)
  })

  it('beside another package\'s groups on the one net: both go, the signal is not swallowed', async () => {
    const ended = await hangUp('beside-acp')
    expect(ended.signal).to.equal('SIGHUP')
    expect(ended.stdout).to.include('other kill ran\n')
    const server = fixturePid(logFile)
    await eventually('the orphaned server is gone', () => !alive(server), 15_000)
  })

  it('beside an owner of the signal: the net stays out of its way (the group still tracked), exit reaps it', async () => {
    const ended = await hangUp('owner')
    expect(ended).to.deep.include({ code: 0, signal: null })
    expect(ended.stdout).to.include('owner: groups 1\n')
    const server = fixturePid(logFile)
    await eventually('the server is gone', () => !alive(server), 15_000)
  })
})
