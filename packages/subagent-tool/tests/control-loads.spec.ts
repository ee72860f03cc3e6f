/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context, ForkScope } from 'cordis'
import type { Agent } from '@cordis-subagents/agent'
import type { ToolResult } from '@cordis-subagents/tools'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { call, type Harness, INPUT, loadProvider, loadTool, ProviderControl, setup, until } from './helpers.js'

// Several control loads (`subagent-tool/control`) beside one app: each load's verb names are its own, its unload
// withdraws only its own, and what a caller reads names a verb that caller can call (the newest load it sees).

async function loadControl(ctx: Context, config: Record<string, unknown> = {}): Promise<ForkScope> {
  const fork = ctx.plugin(SubagentControl as any, config)
  await ctx.lifecycle.flush()
  return fork
}

async function unload(ctx: Context, fork: ForkScope): Promise<void> {
  fork.dispose()
  await ctx.lifecycle.flush()
}

describe('subagent-tool: several control loads (each load\'s verb names are its own)', () => {
  let h: Harness
  let spawn: ProviderControl
  let root: Agent

  beforeEach(async () => {
    h = await setup()
    spawn = new ProviderControl()
    spawn.parkable = true
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    root = h.ctx.agents.create({ label: 'root' })
  })
  afterEach(async () => { await h.stop() })

  /** Calls the sync tool as `agent` and parks its child on a question; the call's result. */
  async function asked(agent: Agent, name = 'subagent'): Promise<ToolResult> {
    const before = spawn.runs.length
    const result = call(h.ctx, INPUT, { agent, name })
    await until(() => spawn.runs.length > before)
    spawn.last.ask('Which colour?')
    return result
  }

  /** The question as the model reads it: no suspension, and how to answer names `verb`. */
  function expectAnswerableWith(result: ToolResult, verb: string): void {
    expect(result.suspend, 'the call escalated instead of giving the model the question').to.equal(undefined)
    expect(result.isError).to.equal(undefined)
    expect(result.content).to.include('Which colour?')
    expect(result.content).to.include(`Answer it with ${verb} { "handle": "${spawn.last.request.runId}"`)
  }

  it('a second load (another prefix) unloaded again: a sync question reaches the model with the first load\'s reply verb', async () => {
    await loadControl(h.ctx)
    await unload(h.ctx, await loadControl(h.ctx, { prefix: 'ops' }))
    await loadTool(h.ctx, { provider: 'spawn' })
    expect(root.tools!.has('subagent_reply')).to.equal(true)
    expectAnswerableWith(await asked(root), 'subagent_reply')
  })

  it('unloading the first of two loads withdraws only its names: the later load\'s reply verb is named', async () => {
    const first = await loadControl(h.ctx)
    await loadControl(h.ctx, { prefix: 'ops' })
    await unload(h.ctx, first)
    await loadTool(h.ctx, { provider: 'spawn' })
    expectAnswerableWith(await asked(root), 'ops_reply')
  })

  it('background, a second load unloaded again: the start names the first load\'s verbs, a child\'s question is not stopped', async () => {
    await loadControl(h.ctx)
    await unload(h.ctx, await loadControl(h.ctx, { prefix: 'ops' }))
    await loadTool(h.ctx, { provider: 'spawn', mode: 'background', onTurnEnd: 'end' })
    const started = await call(h.ctx, INPUT, { agent: root })
    expect(started.content).to.include('subagent_wait { "handles": ["bg-1"] } collects it')
    await until(() => spawn.runs.length === 1)
    spawn.last.ask('Which colour?')
    await until(() => root.inbox.size === 1, 'the question was posted to the parent')
    const [message] = root.inbox.drain()
    expect(message).to.include('asks a question')
    expect(message).to.include(`Answer it with subagent_reply { "handle": "${spawn.last.request.runId}"`)
    expect(message).to.not.include('The subagent was stopped')
    expect(spawn.last.disposeCalls).to.equal(0)
  })

  for (const order of ['nested first', 'root-only first'] as const) {
    it(`a nested load and a root-only load (${order}): a depth-1 caller is told its own verbs, the root the newest it has`, async () => {
      const deep = () => loadControl(h.ctx, { prefix: 'deep', nested: true })
      const plain = () => loadControl(h.ctx)
      if (order === 'nested first') { await deep(); await plain() } else { await plain(); await deep() }
      await loadTool(h.ctx, { provider: 'spawn', nested: true })
      const child = h.ctx.agents.create({ parent: root, label: 'child' })
      expect(child.depth).to.equal(1)
      expect(child.tools!.has('subagent_reply')).to.equal(false)
      expectAnswerableWith(await asked(child), 'deep_reply')
      expectAnswerableWith(await asked(root), order === 'nested first' ? 'subagent_reply' : 'deep_reply')
    })
  }

  it('a depth-1 caller\'s cut output and background start name the verbs of the nested load, not a later root-only one', async () => {
    await loadControl(h.ctx, { prefix: 'deep', nested: true })
    await loadControl(h.ctx)
    spawn.onRun = (run) => run.complete('x'.repeat(300))
    await loadTool(h.ctx, { provider: 'spawn', nested: true, maxOutputBytes: 100 })
    await loadTool(h.ctx, { provider: 'spawn', nested: true, toolName: 'subagent_bg', mode: 'background', onTurnEnd: 'end' })
    const child = h.ctx.agents.create({ parent: root, label: 'child' })
    const cut = await call(h.ctx, INPUT, { agent: child })
    expect(cut.content).to.include(`read the rest with deep_result { "handle": "${spawn.last.request.runId}", "offset": 100 }`)
    const started = await call(h.ctx, INPUT, { agent: child, name: 'subagent_bg' })
    expect(started.content).to.include('deep_wait { "handles": ["bg-1"] } collects it, deep_status shows progress')
    await until(() => child.inbox.size === 1, 'the background result was delivered')
  })
})
