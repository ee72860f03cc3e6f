/// <reference types="mocha" />
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { cgroupBase } from '../src/containment/cgroup.js'
import { assertNoLeftovers, isAlive, until } from './helpers.js'

const HOST = fileURLToPath(new URL('./fixtures/host.ts', import.meta.url))
const WARM_HOST = fileURLToPath(new URL('./fixtures/warm-host.ts', import.meta.url))

/** Starts the host script; resolves with its agent's pids once the run is going. */
async function startHost(mode: 'exit' | 'wait', grandchild: 'plain' | 'setsid' = 'plain') {
  const host = spawn(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', HOST, mode, grandchild], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  host.stderr.on('data', (chunk) => { stderr += chunk })
  const exited = once(host, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  const pids = await new Promise<{ pid: number; grandchild: number }>((resolve, reject) => {
    host.stdout.on('data', (chunk) => {
      stdout += chunk
      const line = stdout.split('\n')[0]
      if (stdout.includes('\n')) resolve(JSON.parse(line))
    })
    exited.then(([code, signal]) => reject(new Error(`host ended early (${code ?? signal}): ${stderr}`)))
  })
  return { host, pids, exited }
}

/** Whether `pid` dies within a second (polled). */
async function gone(pid: number) {
  await until(() => !isAlive(pid), `process ${pid} to die`, 1000).catch(() => {})
  return !isAlive(pid)
}

describe('provider-acp: no agent process outlives the host', () => {
  afterEach(() => {
    assertNoLeftovers()
  })

  it('the host calling process.exit() takes the agent group (grandchild included) with it', async () => {
    const { pids, exited } = await startHost('exit')
    const [code] = await exited
    expect(code).to.equal(0)
    expect(await gone(pids.pid)).to.equal(true)
    expect(await gone(pids.grandchild)).to.equal(true)
  })

  it('a host killed by SIGTERM (no handler of its own) kills the agent group, then dies of the signal', async () => {
    const { host, pids, exited } = await startHost('wait')
    expect(isAlive(pids.pid)).to.equal(true)
    expect(isAlive(pids.grandchild)).to.equal(true)
    host.kill('SIGTERM')
    const [code, signal] = await exited
    expect({ code, signal }).to.deep.equal({ code: null, signal: 'SIGTERM' })
    expect(await gone(pids.pid)).to.equal(true)
    expect(await gone(pids.grandchild)).to.equal(true)
  })

  it('a grandchild that left the process group (setsid) dies with the host too where the run has a cgroup; else it is the documented escape', async () => {
    const { pids, exited } = await startHost('exit', 'setsid')
    await exited
    expect(await gone(pids.pid)).to.equal(true)
    if (cgroupBase()) {
      expect(await gone(pids.grandchild)).to.equal(true)
    } else {
      expect(isAlive(pids.grandchild)).to.equal(true)
      process.kill(pids.grandchild, 'SIGKILL')
      expect(await gone(pids.grandchild)).to.equal(true)
    }
  })

  it('spares and idle pooled processes never keep the host alive: it ends by itself and takes them with it', async function () {
    this.timeout(120_000)
    const host = spawn(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', WARM_HOST], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    host.stdout.on('data', (chunk) => { stdout += chunk })
    host.stderr.on('data', (chunk) => { stderr += chunk })
    const exited = once(host, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
    // Far below the host's idleTimeout (1 h): the host does not wait for its idle processes. The
    // bound is generous: tsx compiling the host and two agents starting take long on a loaded machine.
    const timer = setTimeout(() => host.kill('SIGKILL'), 90_000)
    const [code] = await exited
    clearTimeout(timer)
    expect(code, stderr).to.equal(0)
    const { pids } = JSON.parse(stdout.split('\n')[0]) as { pids: number[] }
    expect(pids).to.have.length(3)
    for (const pid of pids) expect(await gone(pid), `pooled process ${pid}`).to.equal(true)
  })
})
