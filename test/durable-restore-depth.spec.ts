// A parked spawn child at depth 2 (its parent an agent at depth 1), its host stopped, and the run resumed by id on a
// second start of the host on the same SQLite file. The journal gives the restored run a fresh root agent as its parent
// (depth 0); the child keeps its stored depth, so the depth limits of its tree apply from there: under the deployment's
// maxDepth 3 it delegates once more (a child at depth 3, which cannot delegate again), under maxDepth 2 not at all.
// Real Contexts, the real services, the real checkpoints store; a scripted model at the far edge.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import type { Context } from 'cordis'
import { type GenerateRequest, type Message, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import type { SubagentRunInfo } from '@cordis-subagents/subagents-service'
import type { Host } from './support/host.js'
import { sqliteHost } from './support/sqlite-host.js'
import { waitFor } from './support/host-process-wait.js'

type ToolMessage = Extract<Message, { role: 'tool' }>

/** The turn's prompt (its last user message) and the tool results so far, by tool name. */
function read(request: GenerateRequest): { prompt: string; results: Map<string, string> } {
  const users = request.messages.filter((m) => m.role === 'user')
  const results = new Map<string, string>()
  for (const m of request.messages) if (m.role === 'tool') results.set((m as ToolMessage).name, m.content)
  return { prompt: users.at(-1)?.content ?? '', results }
}

const delegate = (prompt: string) => ({ name: 'subagent', input: { description: `task: ${prompt}`, prompt } })

/**
 * `paint` (the depth-2 child): asks its colour, then probes its depth and delegates `level below`, then answers with all
 * of it. `level below`: probes, tries to delegate `deeper still`, and answers with what it got. `deeper still` never runs.
 */
function model(): ScriptedModel {
  return new ScriptedModel((request): ScriptedResponse => {
    const { prompt, results } = read(request)
    if (prompt === 'paint') {
      const colour = results.get('ask_parent')
      if (colour === undefined) return { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] }
      if (!results.has('probe')) return { toolCalls: [{ name: 'probe', input: {} }, delegate('level below')] }
      return { text: `painted ${colour} | ${results.get('probe')} | below: ${results.get('subagent')}` }
    }
    if (prompt === 'level below') {
      if (!results.has('probe')) return { toolCalls: [{ name: 'probe', input: {} }, delegate('deeper still')] }
      return { text: `${results.get('probe')} / ${results.get('subagent')}` }
    }
    throw new Error(`the model got a turn it must never get: ${JSON.stringify(prompt)}`)
  })
}

const probe = {
  name: 'probe',
  description: 'Says the depth of the agent that called it.',
  input: z.object({}),
  execute: (_input: unknown, exec: { agent: { depth: number } }) => ({ content: `at depth ${exec.agent.depth}` }),
}

async function host(file: string, maxDepth: number, starts: SubagentRunInfo[] = []): Promise<Host> {
  const h = await sqliteHost(file, 'restore-depth', {
    agents: { model: 'm' },
    subagents: { maxDepth },
    before(ctx: Context) {
      ctx.on('subagent/start', (info) => { starts.push(info) })
      ctx.tools.register(probe)
      ctx.agents.registerModel('m', model())
      ctx.plugin(Spawn, { name: 'spawn', askParent: true })
      ctx.plugin(SubagentTool, { provider: 'spawn', nested: true } as SubagentTool.Config)
    },
  })
  await h.ctx.subagents.ready('spawn')
  return h
}

describe('durable restore: a spawn child at depth 2 keeps its depth after a restart', function () {
  let dir: string
  const hosts: Host[] = []

  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'restore-depth-')) })
  afterEach(async () => {
    for (const h of hosts.splice(0)) await h.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  /** Parks a `paint` child of a depth-1 agent on the first start; returns its run id once the store has it parked. */
  async function parkAtDepthTwo(file: string, maxDepth: number): Promise<string> {
    const first = await host(file, maxDepth)
    hosts.push(first)
    const root = first.ctx.agents.create({ label: 'root' })
    const mid = first.ctx.agents.create({ label: 'mid', parent: root })
    expect(mid.depth).to.equal(1)
    const run = await first.ctx.subagents.delegate('spawn', { prompt: 'paint', parent: mid, signal: new AbortController().signal })
    expect((await run.result).stopReason).to.equal('pending')
    await waitFor(async () => (await first.ctx.checkpoints.load(run.id))?.state === 'parked'
      && (await first.ctx.checkpoints.questions.pending({ runId: run.id })).length === 1, 'the run parked in the store')
    expect(((await first.ctx.checkpoints.load(run.id))!.transcript as { depth: number }).depth).to.equal(2)
    await first.stop()
    return run.id
  }

  it('under maxDepth 3 the resumed child runs at depth 2 and delegates once more; its child (depth 3) cannot delegate', async () => {
    const file = join(dir, 'three.db')
    const runId = await parkAtDepthTwo(file, 3)
    const starts: SubagentRunInfo[] = []
    const second = await host(file, 3, starts)
    hosts.push(second)
    await waitFor(() => second.ctx.subagents.pending().some((p) => p.runId === runId), 'the parked run listed')

    const outcome = await second.ctx.subagents.resume(runId, 'blue')

    expect(outcome.stopReason, outcome.diagnostic).to.equal('completed')
    const [painted, itself, below] = outcome.output.split(' | ')
    expect(painted).to.equal('painted blue')
    expect(itself).to.equal('at depth 2')
    expect(below).to.match(/^below: at depth 3 \/ Could not start the subagent\./)
    expect(below).to.include('DEPTH_EXCEEDED').and.include('would have depth 4, more than the deployment\'s maxDepth 3')
    // Its one delegation started at depth 3; nothing deeper started.
    expect(starts.filter((info) => info.runId !== runId).map((info) => info.depth)).to.deep.equal([3])
    expect((await second.ctx.checkpoints.load(runId))!.state).to.equal('settled')
  })

  it('under maxDepth 2 the resumed child runs at depth 2 and cannot delegate at all', async () => {
    const file = join(dir, 'two.db')
    const runId = await parkAtDepthTwo(file, 2)
    const starts: SubagentRunInfo[] = []
    const second = await host(file, 2, starts)
    hosts.push(second)
    await waitFor(() => second.ctx.subagents.pending().some((p) => p.runId === runId), 'the parked run listed')

    const outcome = await second.ctx.subagents.resume(runId, 'red')

    expect(outcome.stopReason, outcome.diagnostic).to.equal('completed')
    const [painted, itself, below] = outcome.output.split(' | ')
    expect(painted).to.equal('painted red')
    expect(itself).to.equal('at depth 2')
    expect(below).to.match(/^below: Could not start the subagent\./)
    expect(below).to.include('would have depth 3, more than the deployment\'s maxDepth 2')
    expect(starts.filter((info) => info.runId !== runId)).to.deep.equal([])
  })
})
