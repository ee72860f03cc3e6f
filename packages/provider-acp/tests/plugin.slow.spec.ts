/// <reference types="mocha" />
import { resolve } from 'node:path'
import { expect } from 'chai'
import { Context } from 'cordis'
import SubagentService, { type SubagentRunInfo, type SubagentUpdate } from '@cordis-subagents/subagents-service'
import * as AcpProvider from '@cordis-subagents/provider-acp'
import { assertNoLeftovers, FAST, fixtureArgs, harness, type Harness, rejection, until } from './helpers.js'
import { liveProcessGroups } from '../src/index.js'

/** `fork.status` of a plugin whose apply (or config schema) threw: cordis `ScopeStatus.FAILED`. */
const FAILED = 3

function noGroupsLeft() {
  return until(() => liveProcessGroups().length === 0, 'every agent process group to be gone', 5000)
}

describe('provider-acp: as a cordis plugin under ctx.subagents', () => {
  let ctx: Context
  let h: Harness

  beforeEach(async () => {
    h = await harness()
    ctx = h.ctx
    ctx.plugin(SubagentService)
  })

  afterEach(async () => {
    await h.stop()
    assertNoLeftovers()
  })

  function load(mode: string, arg?: string, config: Record<string, unknown> = {}) {
    return ctx.plugin(AcpProvider, { command: process.execPath, args: fixtureArgs(mode, arg), ...FAST, ...config })
  }

  it('registers provider "acp": no capabilities, fresh context, description from config', async () => {
    load('stream', undefined, { description: 'Fixture agent over ACP' })
    await ctx.lifecycle.flush()
    const provider = ctx.subagents.get('acp')!
    expect(provider).to.be.an('object')
    expect(provider.capabilities).to.deep.equal({ persona: false, toolFilter: false, depthLimit: false })
    expect(provider.inheritsParentContext).to.equal(false)
    expect(provider.description).to.equal('Fixture agent over ACP')
  })

  it('ctx.subagents.delegate("acp") runs the child end to end with events and progress', async () => {
    load('stream')
    await ctx.lifecycle.flush()
    const events: string[] = []
    const updates: SubagentUpdate[] = []
    let started: SubagentRunInfo | undefined
    ctx.on('subagent/start', (info) => { started = info; events.push('start') })
    ctx.on('subagent/update', () => { events.push('update') })
    ctx.on('subagent/end', () => { events.push('end') })
    const parent = ctx.agents.create()
    const run = await ctx.subagents.delegate('acp', {
      prompt: 'What is the answer?', parent, signal: new AbortController().signal, onUpdate: (update) => updates.push(update),
    })
    const result = await run.result
    await run.dispose()
    expect(result.stopReason).to.equal('completed')
    expect(result.output).to.equal('Final answer: 42')
    expect(result.usage).to.deep.equal({ inputTokens: 10, outputTokens: 5, cachedInputTokens: 2 })
    expect(started).to.deep.include({ provider: 'acp', parentId: parent.id, childId: 'sess-1', depth: parent.depth + 1 })
    expect(events[0]).to.equal('start')
    expect(events.at(-1)).to.equal('end')
    expect(events.filter((event) => event === 'update')).to.have.length(updates.length)
    expect(updates.length).to.be.greaterThan(5)
  })

  it('a relative cwd is resolved against the app directory (ctx.baseDir)', async () => {
    load('echo', '', { cwd: 'packages/provider-acp' })
    await ctx.lifecycle.flush()
    const run = await ctx.subagents.delegate('acp', { prompt: 'where?', parent: ctx.agents.create(), signal: new AbortController().signal })
    const echo = JSON.parse((await run.result).output)
    await run.dispose()
    expect(echo.sessionCwd).to.equal(resolve(ctx.baseDir, 'packages/provider-acp'))
  })

  it('a cwd that does not exist fails the plugin at load with a message naming cwd', async () => {
    const errors = h.errors as Error[]
    const fork = load('stream', undefined, { cwd: 'no/such/directory' })
    await ctx.lifecycle.flush()
    expect(fork.status).to.equal(FAILED)
    expect(ctx.subagents.get('acp')).to.equal(undefined)
    expect(errors).to.have.length(1)
    expect(errors[0].message).to.match(/config\.cwd "no\/such\/directory"/)
    expect(errors[0].message).to.match(/does not exist/)
    expect((errors[0] as Error & { code?: string }).code).to.equal('ACP_INVALID_CONFIG')
  })

  it('an env name with "=", an empty name or a NUL fails the plugin at load with ACP_INVALID_CONFIG naming it', async () => {
    const errors = h.errors as Array<Error & { code?: string }>
    for (const [name, shown] of [['A=B', '"A=B"'], ['', '""'], ['X\0Y', '"X\\u0000Y"']]) {
      errors.length = 0
      const fork = load('stream', undefined, { env: { ...FAST.env, [name]: 'C' } })
      await ctx.lifecycle.flush()
      expect(fork.status, name).to.equal(FAILED)
      expect(errors, name).to.have.length(1)
      expect(errors[0].code).to.equal('ACP_INVALID_CONFIG')
      expect(errors[0].message).to.include(`invalid variable name ${shown}`)
      fork.dispose()
    }
    expect(ctx.subagents.get('acp')).to.equal(undefined)
  })

  it('a config without command fails the plugin at load', async () => {
    const errors = h.errors as Error[]
    const fork = ctx.plugin(AcpProvider, { args: [] } as never)
    await ctx.lifecycle.flush()
    expect(fork.status).to.equal(FAILED)
    expect(errors.map((error) => error.message).join('\n')).to.match(/command/)
  })

  it('loads twice under different names (reusable)', async () => {
    load('stream', undefined, { name: 'acp_a' })
    load('stream', undefined, { name: 'acp_b' })
    await ctx.lifecycle.flush()
    expect(ctx.subagents.list().map((provider) => provider.name)).to.deep.equal(['acp_a', 'acp_b'])
  })

  it('unloading the provider stops new starts only; a run already handed over keeps going', async () => {
    const fork = load('delay', '300')
    await ctx.lifecycle.flush()
    const run = await ctx.subagents.delegate('acp', { prompt: 'slow task', parent: ctx.agents.create(), signal: new AbortController().signal })
    fork.dispose()
    expect(ctx.subagents.get('acp')).to.equal(undefined)
    const result = await run.result
    await run.dispose()
    expect(result).to.deep.include({ stopReason: 'completed', output: 'started; done after a while' })
  })

  it('aborting the caller\'s signal during startup rejects and leaves no process', async () => {
    load('hang-init')
    await ctx.lifecycle.flush()
    const controller = new AbortController()
    const before = new Set(liveProcessGroups())
    const starting = ctx.subagents.delegate('acp', { prompt: 'x', parent: ctx.agents.create(), signal: controller.signal })
    await until(() => liveProcessGroups().some((group) => !before.has(group)), 'the agent process to be spawned')
    controller.abort()
    const error = await rejection(starting)
    expect(error.code).to.equal('ABORTED')
    // The service rejects at once; the provider finishes stopping the process right after.
    await noGroupsLeft()
  })

  it('drains the agent\'s stderr into the acp logger at debug level, scrubbed', async () => {
    load('crash')
    await ctx.lifecycle.flush()
    const run = await ctx.subagents.delegate('acp', { prompt: 'x', parent: ctx.agents.create(), signal: new AbortController().signal })
    expect((await run.result).stopReason).to.equal('error')
    await run.dispose()
    const lines = h.logs.filter((record) => record.name === 'acp' && record.type === 'debug' && record.content.includes('fatal: boom'))
    expect(lines).to.have.length(1)
    expect(lines[0].content).to.include('OPENAI_API_KEY=[redacted]')
    expect(lines[0].content).to.not.include('sk-live')
  })

  it('a startup failure reaches the caller with the provider\'s message', async () => {
    load('auth')
    await ctx.lifecycle.flush()
    const error = await rejection(ctx.subagents.delegate('acp', { prompt: 'x', parent: ctx.agents.create(), signal: new AbortController().signal }))
    expect(error.message).to.match(/requires authentication/)
    expect(error.message).to.match(/"oauth"/)
  })
})
