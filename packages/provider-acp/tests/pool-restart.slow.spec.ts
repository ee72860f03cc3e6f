/// <reference types="mocha" />
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Context } from 'cordis'
import SubagentService from '@cordis-subagents/subagents-service'
import * as AcpPlugin from '@cordis-subagents/provider-acp'
import { type AcpProvider, liveProcessGroups } from '../src/index.js'
import { SPARE_RETRY_BASE_MS } from '../src/pool/pool.js'
import { assertNoLeftovers, FAST, fixtureProcesses, harness, type Harness, HOSTILE, sleep, until } from './helpers.js'

/** Issue 26, item 6: a spare that dies right after it starts must not be replaced forever. */
describe('provider-acp: warm spares that die right after they start (no restart loop)', () => {
  let ctx: Context
  let h: Harness
  let dir: string

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'acp-die-after-init-'))
    h = await harness()
    ctx = h.ctx
    ctx.plugin(SubagentService)
  })

  afterEach(async () => {
    await h.stop()
    await until(() => fixtureProcesses().length === 0, 'every fixture process to stop', 5000)
    await until(() => liveProcessGroups().length === 0, 'every process group to be unregistered', 5000).catch(() => {})
    assertNoLeftovers()
    rmSync(dir, { recursive: true, force: true })
  })

  /** Starts so far, with the time each process started (its own clock reading). */
  function spawned(): Array<{ pid: number; at: number }> {
    return readFileSync(join(dir, 'spawned'), 'utf8').split('\n').filter(Boolean)
      .map((line) => line.split(' ').map(Number)).map(([pid, at]) => ({ pid, at }))
  }

  const pool = () => (ctx.subagents.get('acp') as AcpProvider).pool!

  async function delegate() {
    return ctx.subagents.delegate('acp', { prompt: 'hello', parent: ctx.agents.create(), signal: new AbortController().signal })
  }

  it('backs off, pauses after maxSpareFailures in a row (logged once, with the exit code and stderr), shows it, and resumes after a good run', async () => {
    // Every start after the first answers initialize and exits right away.
    writeFileSync(join(dir, 'die'), '1')
    ctx.plugin(AcpPlugin, { command: process.execPath, args: [HOSTILE, 'die-after-init', dir], ...FAST, warm: true, idleTimeout: 200 })
    await ctx.lifecycle.flush()
    const first = await delegate()
    expect(first.info.origin).to.equal('cold')
    expect((await first.result).stopReason).to.equal('completed')
    await first.dispose()

    await until(() => pool().spareStatus().state === 'paused', 'spares to be paused', 15_000)
    const status = pool().spareStatus()
    expect(status.failuresInARow).to.equal(3)
    expect(status.lastFailure).to.match(/exited with code 3/)
    expect(status.lastFailure).to.include('fatal: hostile agent dies right after it started')
    expect(pool().status()).to.deep.include({ starting: 0, idle: 0, busy: 0 })
    // The cold process and the default 3 spares, nothing more: the old code replaced them forever.
    expect(spawned()).to.have.length(4)
    // Each retry waited at least the backoff (a lower bound: load only makes the gaps longer).
    const [, a, b, c] = spawned()
    expect(b.at - a.at).to.be.at.least(SPARE_RETRY_BASE_MS)
    expect(c.at - b.at).to.be.at.least(2 * SPARE_RETRY_BASE_MS)
    // Well past idleTimeout and the last backoff, still nothing new starts.
    await sleep(2 * SPARE_RETRY_BASE_MS)
    expect(spawned()).to.have.length(4)
    expect(fixtureProcesses()).to.deep.equal([])
    const warnings = h.logs.filter((record) => record.type === 'warn' && /spare agent processes in a row/.test(record.content))
    expect(warnings).to.have.length(1)
    expect(warnings[0].content).to.match(/3 spare agent processes in a row failed to start or died right after starting/)
    expect(warnings[0].content).to.match(/exited with code 3 while it waited for a run/)
    expect(warnings[0].content).to.include('fatal: hostile agent dies right after it started')

    // The agent is healthy again: a delegation starts a cold process, says why, and spares resume.
    rmSync(join(dir, 'die'))
    const second = await delegate()
    expect(second.info.origin).to.equal('cold (spares paused)')
    expect(ctx.subagents.runs().map((info) => info.origin)).to.deep.equal(['cold (spares paused)'])
    expect((await second.result).stopReason).to.equal('completed')
    await second.dispose()
    expect(pool().spareStatus()).to.deep.include({ state: 'ready', failuresInARow: 0 })
    await until(() => pool().counts().idle === 1, 'a spare to be started again')
    expect(h.logs.some((record) => record.type === 'info' && /spares are started again/.test(record.content))).to.equal(true)
  })

  it('maxSpareFailures is configurable: one failure pauses the spares', async () => {
    writeFileSync(join(dir, 'die'), '1')
    ctx.plugin(AcpPlugin, {
      command: process.execPath, args: [HOSTILE, 'die-after-init', dir], ...FAST, warm: true, maxSpareFailures: 1,
    })
    await ctx.lifecycle.flush()
    const run = await delegate()
    await run.result
    await run.dispose()
    await until(() => pool().spareStatus().state === 'paused', 'spares to be paused', 10_000)
    expect(pool().spareStatus().failuresInARow).to.equal(1)
    await sleep(2 * SPARE_RETRY_BASE_MS)
    expect(spawned()).to.have.length(2)
  })

  it('a load with maxSpareFailures out of range fails at load', async () => {
    const fork = ctx.plugin(AcpPlugin, { command: process.execPath, args: [HOSTILE, 'die-after-init', dir], ...FAST, warm: true, maxSpareFailures: 0 })
    await ctx.lifecycle.flush()
    expect(fork.status).to.equal(3)
    expect(ctx.subagents.get('acp')).to.equal(undefined)
  })
})
