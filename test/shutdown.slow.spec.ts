// Shutdown under load: ctx.stop() with 50 delegations in flight over spawn, fork and acp (real
// subprocess fixture agents), and a reload of every provider while runs are in flight.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { Context, ForkScope } from 'cordis'
import { ScriptedModel, type Agent, type GenerateRequest, type ScriptedResponse } from '@cordis-subagents/agent'
import type { ToolResult } from '@cordis-subagents/tools'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as Fork from '@cordis-subagents/provider-fork'
import * as Acp from '@cordis-subagents/provider-acp'
import { liveProcessGroups } from '@cordis-subagents/provider-acp'
import { SubagentTool, setup, type Harness } from '../packages/subagent-tool/tests/helpers.js'
import { eventually } from './helpers.js'

/**
 * The provider-acp fixture agent, run through a private symlink: other test runs on this machine
 * reap fixture agents by their path, and must not reap ours (node resolves the SDK via the real path).
 */
const FIXTURE_DIR = mkdtempSync(join(tmpdir(), 'subagents-fixture-'))
const FIXTURE = join(FIXTURE_DIR, 'agent.mjs')
symlinkSync(fileURLToPath(new URL('../packages/provider-acp/tests/fixtures/agent.mjs', import.meta.url)), FIXTURE)
const GRACES = { cancelGrace: 300, killGrace: 300 }
/** Slack on top of the graces for a loaded 2-core machine (a bound, not a speed assertion). */
const SLACK = 4000

interface Ps { pid: number; ppid: number; pgid: number; stat: string; args: string }

function ps(): Ps[] {
  return execFileSync('ps', ['-eo', 'pid=,ppid=,pgid=,stat=,args='], { encoding: 'utf8' }).split('\n').filter(Boolean).map((line) => {
    const match = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line)!
    return { pid: Number(match[1]), ppid: Number(match[2]), pgid: Number(match[3]), stat: match[4], args: match[5] }
  })
}

/**
 * Live (non-zombie) fixture agents this process started. Only our own children: other test runs
 * on the same machine may have fixture agents of their own.
 */
function fixtureProcesses(): Ps[] {
  return ps().filter((entry) => !entry.stat.startsWith('Z') && entry.ppid === process.pid && entry.args.includes(FIXTURE))
}

function killLeftovers(): string[] {
  const left = fixtureProcesses()
  for (const entry of left) {
    try { process.kill(entry.pid, 'SIGKILL') } catch { /* gone meanwhile */ }
  }
  return left.map((entry) => `${entry.pid} ${entry.args}`)
}

interface Pending { request: GenerateRequest; resolve(response: ScriptedResponse): void }

interface Rig {
  h: Harness
  ctx: Context
  replies: Pending[]
  started: string[]
  ended: string[]
  providers: Record<'spawn' | 'fork' | 'acp', ForkScope>
  parents: Agent[]
}

/** spawn, fork and acp providers, one tool per provider, `parents` parent agents on a model the test answers. */
async function rig(acpMode: string[], parentCount: number): Promise<Rig> {
  const h = await setup()
  const { ctx } = h
  const replies: Pending[] = []
  ctx.agents.registerModel('m', new ScriptedModel((request) => new Promise<ScriptedResponse>((resolve) => replies.push({ request, resolve }))))
  const started: string[] = []
  const ended: string[] = []
  // Observers outside every scope: ctx.stop() removes the root's own listeners before the runs it cancels end.
  const hooks = ctx.lifecycle._hooks as Record<string, { ctx: unknown; callback: (...args: any[]) => void }[]>
  ;(hooks['subagent/start'] ||= []).push({ ctx, callback: (info: { runId: string }) => { started.push(info.runId) } })
  ;(hooks['subagent/end'] ||= []).push({ ctx, callback: (info: { runId: string }) => { ended.push(info.runId) } })
  const providers = {
    spawn: ctx.plugin(Spawn, { name: 'spawn' }),
    fork: ctx.plugin(Fork, { name: 'fork' }),
    acp: ctx.plugin(Acp as any, { name: 'acp', command: process.execPath, args: [FIXTURE, ...acpMode], startupTimeout: 30_000, ...GRACES }),
  }
  // nested: the children of the nested-delegation test below delegate again.
  for (const name of ['spawn', 'fork', 'acp']) ctx.plugin(SubagentTool as any, { provider: name, toolName: `sub_${name}`, nested: true })
  await ctx.lifecycle.flush()
  const parents = Array.from({ length: parentCount }, (_, i) => ctx.agents.create({ model: 'm', label: `parent${i}` }))
  return { h, ctx, replies, started, ended, providers, parents }
}

function delegate(r: Rig, provider: string, i: number): Promise<ToolResult> {
  return r.ctx.tools.view().execute(
    { name: `sub_${provider}`, input: { description: `task ${i}`, prompt: `Do task ${i}.` } },
    { signal: new AbortController().signal, agent: r.parents[i % r.parents.length], toolCallId: `c${i}` },
  )
}

async function settled<T>(promises: Promise<T>[], ms: number): Promise<T[]> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`tool calls still pending after ${ms} ms (hang)`)), ms)
  })
  try {
    return await Promise.race([Promise.all(promises), deadline])
  } finally {
    clearTimeout(timer)
  }
}

export const reaped = { groups: 0, stopCalls: 0, reloadCalls: 0 }

describe('shutdown under load', function () {
  this.timeout(60_000)

  afterEach(() => {
    expect(killLeftovers(), 'fixture processes left behind').to.deep.equal([])
  })

  it('ctx.stop() with 50 delegations in flight over spawn, fork and acp: every call returns an error, every ACP process group is reaped', async () => {
    // 10 parents x 5 calls stays under the per-parent gate (8), so all 50 are live at once.
    const r = await rig(['slow'], 10)
    const kinds = ['spawn', 'fork', 'acp'] as const
    const calls = Array.from({ length: 50 }, (_, i) => delegate(r, kinds[i % 3], i))
    const acpCount = calls.filter((_, i) => i % 3 === 2).length
    expect(await eventually(() => r.started.length === 50, 30_000), `runs handed over: ${r.started.length}/50`).to.equal(true)
    const groups = liveProcessGroups()
    expect(groups, 'one process group per ACP run').to.have.length(acpCount)

    const stoppedAt = Date.now()
    await r.h.stop()
    const results = await settled(calls, GRACES.cancelGrace + GRACES.killGrace + SLACK + 5000)
    for (const [i, result] of results.entries()) {
      expect(result.isError, `call ${i} (${kinds[i % 3]}): ${result.content}`).to.equal(true)
      expect(result.content, `call ${i}`).to.match(/cancelled|aborted|unloaded|stopped/i)
    }
    const gone = await eventually(() => liveProcessGroups().length === 0
      && groups.every((pgid) => !ps().some((entry) => entry.pgid === pgid && !entry.stat.startsWith('Z'))),
    GRACES.cancelGrace + GRACES.killGrace + SLACK)
    expect(gone, `ACP process groups left ${Date.now() - stoppedAt} ms after stop: ${liveProcessGroups().join(', ')}`).to.equal(true)
    expect(fixtureProcesses(), 'fixture processes in the process table').to.deep.equal([])
    expect(await eventually(() => r.ended.length === 50, 2000), `subagent/end ${r.ended.length}/50`).to.equal(true)
    reaped.groups += groups.length
    reaped.stopCalls += results.length
  })

  it('ctx.stop() while ACP agents are still starting (they never answer initialize): calls error, groups reaped', async () => {
    const r = await rig(['hang-init'], 2)
    const calls = Array.from({ length: 6 }, (_, i) => delegate(r, 'acp', i))
    expect(await eventually(() => liveProcessGroups().length === 6, 20_000), `groups: ${liveProcessGroups().length}/6`).to.equal(true)
    const groups = liveProcessGroups()
    await r.h.stop()
    const results = await settled(calls, GRACES.cancelGrace + GRACES.killGrace + SLACK + 5000)
    for (const [i, result] of results.entries()) {
      expect(result.isError, `call ${i}: ${result.content}`).to.equal(true)
    }
    expect(r.started, 'nothing was handed over').to.deep.equal([])
    const gone = await eventually(() => liveProcessGroups().length === 0
      && groups.every((pgid) => !ps().some((entry) => entry.pgid === pgid && !entry.stat.startsWith('Z'))),
    GRACES.cancelGrace + GRACES.killGrace + SLACK)
    expect(gone, `ACP process groups left: ${liveProcessGroups().join(', ')}`).to.equal(true)
    reaped.groups += groups.length
    reaped.stopCalls += results.length
  })

  it('ctx.stop() with nested delegations (a spawn child delegating again) in flight: every call returns', async () => {
    const r = await rig(['slow'], 5)
    // The children's model: a child at depth 1 delegates once more (to spawn and to acp); the grandchildren wait.
    r.ctx.agents.registerModel('nest', new ScriptedModel((request) => {
      const last = String(request.messages.at(-1)?.content ?? '')
      if (last.startsWith('Do task')) {
        return { toolCalls: [
          { name: 'sub_spawn', input: { description: 'nested', prompt: 'nested work' } },
          { name: 'sub_acp', input: { description: 'nested acp', prompt: 'nested work' } },
        ] }
      }
      return new Promise<ScriptedResponse>(() => {})
    }))
    const parents = Array.from({ length: 5 }, (_, i) => r.ctx.agents.create({ model: 'nest', label: `nest${i}` }))
    const calls = parents.map((agent, i) => r.ctx.tools.view().execute(
      { name: 'sub_spawn', input: { description: `task ${i}`, prompt: `Do task ${i}.` } },
      { signal: new AbortController().signal, agent, toolCallId: `n${i}` },
    ))
    // 5 children + 5 nested spawn grandchildren + 5 nested ACP grandchildren.
    expect(await eventually(() => r.started.length === 15, 30_000), `runs handed over: ${r.started.length}/15`).to.equal(true)
    const groups = liveProcessGroups()
    expect(groups).to.have.length(5)
    await r.h.stop()
    const results = await settled(calls, GRACES.cancelGrace + GRACES.killGrace + SLACK + 5000)
    for (const [i, result] of results.entries()) expect(result.isError, `call ${i}: ${result.content}`).to.equal(true)
    expect(await eventually(() => liveProcessGroups().length === 0, GRACES.cancelGrace + GRACES.killGrace + SLACK)).to.equal(true)
    expect(await eventually(() => r.ended.length === r.started.length, 2000), `ends ${r.ended.length}/${r.started.length}`).to.equal(true)
    reaped.groups += groups.length
    reaped.stopCalls += results.length
  })

  it('a reload of every provider with runs in flight: the runs finish normally', async () => {
    // The ACP fixture answers after 1.5 s, so its runs are in flight across the reload.
    const r = await rig(['delay', '1500'], 3)
    const kinds = ['spawn', 'fork', 'acp'] as const
    const calls = Array.from({ length: 12 }, (_, i) => delegate(r, kinds[i % 3], i))
    try {
      expect(await eventually(() => r.started.length === 12, 30_000), `runs handed over: ${r.started.length}/12`).to.equal(true)
      expect(await eventually(() => r.replies.length === 8, 5000), 'spawn/fork children waiting on their model').to.equal(true)
      const groups = liveProcessGroups()
      expect(groups).to.have.length(4)

      for (const [kind, fork] of Object.entries(r.providers)) {
        const config = kind === 'acp'
          ? { name: 'acp', command: process.execPath, args: [FIXTURE, 'delay', '1500'], startupTimeout: 30_000, ...GRACES, description: 'reloaded' }
          : { name: kind, description: 'reloaded' }
        fork.update(config)
      }
      await r.ctx.lifecycle.flush()
      // The tools followed their providers out and back in, with the new description.
      for (const kind of kinds) {
        const tool = r.ctx.tools.view().list().find((t) => t.name === `sub_${kind}`)
        expect(tool?.description, `sub_${kind} after the reload`).to.include('reloaded')
      }

      for (const reply of r.replies.splice(0)) reply.resolve({ text: `answer to ${reply.request.messages.at(-1)?.content}` })
      const results = await settled(calls, 30_000)
      for (const [i, result] of results.entries()) {
        expect(result.isError, `call ${i} (${kinds[i % 3]}): ${result.content}`).to.not.equal(true)
        if (kinds[i % 3] === 'acp') expect(result.content).to.include('done after a while')
        else expect(result.content).to.equal(`answer to Do task ${i}.`)
      }
      expect(r.ended).to.have.length(12)
      expect(await eventually(() => liveProcessGroups().length === 0, GRACES.cancelGrace + GRACES.killGrace + SLACK)).to.equal(true)
      reaped.groups += groups.length
      reaped.reloadCalls += results.length
    } finally {
      await r.h.stop()
      await settled(calls, 10_000).catch(() => {})
    }
  })

  after(() => {
    rmSync(FIXTURE_DIR, { recursive: true, force: true })
    console.log(`      shutdown: ${reaped.stopCalls} calls ended by stop, ${reaped.reloadCalls} across a reload, ${reaped.groups} ACP process groups reaped`)
  })
})
