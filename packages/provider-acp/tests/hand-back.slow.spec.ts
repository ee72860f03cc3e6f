/// <reference types="mocha" />
// Hand-back at the end of the turn (issue 27, item 1): the result and the holder's dispose come
// back while the agent process is still dying; the provider reaps it in the background, and its
// stop (a plugin unload, a reload, ctx.stop()) waits for every pending reap. The `slow-exit`
// fixture ignores the end of stdin like Codex' and Claude's adapters, and on SIGTERM writes
// <dir>/sigterm and exits only once the test writes <dir>/release: the order is asserted on
// events and pids, never on wall-clock margins.
import { expect } from 'chai'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SubagentService from '@cordis-subagents/subagents-service'
import * as AcpProvider from '@cordis-subagents/provider-acp'
import { liveProcessGroups } from '../src/index.js'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { assertNoLeftovers, FAST, harness, HOSTILE, hostileProvider, isAlive, reapAll, request, until } from './helpers.js'

describe('provider-acp: hand-back at the end of the turn, reaping in the background', function () {
  this.timeout(30_000)
  let dir: string

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'acp-handback-'))
  })

  afterEach(async () => {
    // Whatever happened, let the agent go, so a failure does not cascade.
    writeFileSync(join(dir, 'release'), '')
    await reapAll()
    assertNoLeftovers()
    rmSync(dir, { recursive: true, force: true })
  })

  const sigtermSeen = () => existsSync(join(dir, 'sigterm'))
  const release = () => writeFileSync(join(dir, 'release'), '')

  it('the result and dispose() come back while the process still lives; reaped() resolves once it is gone', async () => {
    const acp = hostileProvider('slow-exit', dir, { killGrace: 20_000 })
    const run = await acp.start(request()) as AcpRun
    const pid = run.pid!
    expect((await run.result).stopReason).to.equal('completed')
    await run.dispose()
    // It cannot exit before the test releases it, so this is an ordering, not a race.
    expect(isAlive(pid), 'the agent after dispose()').to.equal(true)
    expect(liveProcessGroups()).to.include(pid)
    await until(sigtermSeen, 'the background teardown to send SIGTERM')
    let reaped = false
    const reaping = acp.reaped().then(() => { reaped = true })
    expect(isAlive(pid)).to.equal(true)
    expect(reaped, 'reaped() while the agent lives').to.equal(false)
    release()
    await reaping
    expect(isAlive(pid)).to.equal(false)
    expect(liveProcessGroups()).to.not.include(pid)
  })

  it('stop() waits for a pending reap; a run that ends after stop() waits for its own in dispose()', async () => {
    const acp = hostileProvider('slow-exit', dir, { killGrace: 20_000 })
    const first = await acp.start(request({ runId: 'first' })) as AcpRun
    const second = await acp.start(request({ runId: 'second', prompt: 'hold' })) as AcpRun
    await first.result
    await first.dispose()
    await until(sigtermSeen, 'SIGTERM to the first agent')
    // The second run is still in its turn: its process is not a reap of the stop.
    let stopped = false
    const stopping = acp.stop().then(() => { stopped = true })
    expect(isAlive(first.pid!)).to.equal(true)
    expect(stopped, 'stop() while the first agent lives').to.equal(false)
    release()
    await stopping
    expect(isAlive(first.pid!)).to.equal(false)
    expect(isAlive(second.pid!)).to.equal(true)
    // After stop() nobody else waits: the second run's dispose waits for its own process.
    writeFileSync(join(dir, 'finish'), '')
    await second.result
    await second.dispose()
    expect(isAlive(second.pid!)).to.equal(false)
  })

  it('through ctx.subagents the holder\'s dispose returns at the end of the turn; unloading the provider waits for the reap', async () => {
    const h = await harness()
    try {
      const { ctx } = h
      ctx.plugin(SubagentService)
      const fork = ctx.plugin(AcpProvider, { command: process.execPath, args: [HOSTILE, 'slow-exit', dir], ...FAST, killGrace: 20_000 })
      await ctx.lifecycle.flush()
      const parent = ctx.agents.create()
      const run = await ctx.subagents.delegate('acp', { prompt: 'go', parent, signal: new AbortController().signal })
      const result = await run.result
      const pid = Number(/pid (\d+)/.exec(result.output)![1])
      await run.dispose()
      expect(isAlive(pid), 'the agent when the holder got its result back').to.equal(true)
      expect(ctx.subagents.runs(), 'runs() after the holder disposed the run').to.deep.equal([])
      await until(sigtermSeen, 'SIGTERM to the agent')
      fork.dispose()
      let flushed = false
      const flushing = ctx.lifecycle.flush().then(() => { flushed = true })
      // The unload's reap is a lifecycle task: flush() (and ctx.stop() followed by it) waits for it.
      await until(() => ctx.subagents.get('acp') === undefined, 'the provider to be removed')
      expect(flushed, 'flush() while the agent lives').to.equal(false)
      expect(isAlive(pid)).to.equal(true)
      release()
      await flushing
      expect(isAlive(pid)).to.equal(false)
      expect(liveProcessGroups()).to.deep.equal([])
      await parent.dispose()
    } finally {
      await h.stop()
    }
  })

  it('an agent that also ignores SIGTERM is SIGKILLed after killGrace in the background', async () => {
    const acp = hostileProvider('ignore-stdin', 'and-sigterm', { killGrace: 200 })
    const run = await acp.start(request()) as AcpRun
    await run.result
    await run.dispose()
    await acp.reaped()
    expect(isAlive(run.pid!)).to.equal(false)
  })
})
