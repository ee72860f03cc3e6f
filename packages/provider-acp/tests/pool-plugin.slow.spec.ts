/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import SubagentService from '@cordis-subagents/subagents-service'
import * as AcpPlugin from '@cordis-subagents/provider-acp'
import { type AcpProvider, liveProcessGroups } from '../src/index.js'
import { assertNoLeftovers, FAST, fixtureArgs, fixtureProcesses, harness, type Harness, isAlive, until } from './helpers.js'

describe('provider-acp: the process pool under a cordis plugin load', () => {
  let ctx: Context
  let h: Harness

  beforeEach(async () => {
    h = await harness()
    ctx = h.ctx
    ctx.plugin(SubagentService)
  })

  afterEach(async () => {
    await h.stop()
    await until(() => fixtureProcesses().length === 0, 'every fixture process to stop', 5000)
    // A group is unregistered once its teardown saw the exit, a moment after the process is gone.
    await until(() => liveProcessGroups().length === 0, 'every process group to be unregistered', 5000).catch(() => {})
    assertNoLeftovers()
  })

  function load(config: Record<string, unknown>) {
    return ctx.plugin(AcpPlugin, { command: process.execPath, args: fixtureArgs('sessions'), ...FAST, ...config })
  }

  const pool = () => (ctx.subagents.get('acp') as AcpProvider).pool!

  async function delegate(prompt: string) {
    return ctx.subagents.delegate('acp', { prompt, parent: ctx.agents.create(), signal: new AbortController().signal })
  }

  it('a reload stops the old load\'s spares; the new load starts none before its first run', async () => {
    const fork = load({ warm: true, reuse: true, spares: 2 })
    await ctx.lifecycle.flush()
    const run = await delegate('answer')
    expect(run.info.origin).to.equal('cold') // the run's info (events, runs()) says how it got its process
    expect((await run.result).stopReason).to.equal('completed')
    await run.dispose()
    // The two spares started when the run took its cold process, and that process given back.
    await until(() => pool().counts().idle === 3, 'three idle processes')
    const second = await delegate('answer')
    expect(ctx.subagents.runs().map((info) => info.origin)).to.deep.equal([second.info.origin])
    expect(['warm', 'reused']).to.include(second.info.origin)
    await second.result
    await second.dispose()
    await until(() => pool().counts().idle === 3, 'three idle processes again')
    const old = pool().idlePids()
    fork.update({ command: process.execPath, args: fixtureArgs('sessions'), ...FAST, warm: true, reuse: true, spares: 1 })
    await ctx.lifecycle.flush()
    await until(() => old.every((pid) => !isAlive(pid)), 'the old load\'s processes to stop')
    expect(pool().counts()).to.deep.equal({ starting: 0, idle: 0, busy: 0, stopping: 0 })
  })

  it('ctx.stop() reaps spares at once; a live run keeps its process until its holder ends it, then nothing is left', async () => {
    load({ warm: true, reuse: true, spares: 2 })
    await ctx.lifecycle.flush()
    const warmup = await delegate('answer')
    await warmup.result
    await warmup.dispose()
    await until(() => pool().counts().idle === 3, 'three idle processes (two spares and the one given back)')
    const live = await delegate('wait')
    const spares = pool().idlePids()
    expect(spares).to.have.length(2)
    const runs = ctx.subagents.runs()
    expect(runs).to.have.length(1)
    await h.stop()
    await until(() => spares.every((pid) => !isAlive(pid)), 'the spares to stop')
    // The run was handed over before the stop: its holder still owns it.
    expect(fixtureProcesses()).to.have.length(1)
    live.cancel('the host stops')
    expect((await live.result).stopReason).to.equal('aborted')
    await live.dispose()
    expect(fixtureProcesses()).to.deep.equal([])
  })
})
