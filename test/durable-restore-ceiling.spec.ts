// A spawn child started under a ceiling (the delegation's tool filter, its parent's own narrower tool view, a tree
// budget), parked, its host stopped, and the run resumed by id on a second start of the host on the same SQLite file.
// The journal's fresh root parent sees every tool and has the runtime's default budget: the child keeps its ceiling
// anyway (it is in the provider run's checkpoint). A checkpoint stored before the ceiling was (none in it) still
// restores, under the fresh parent's view. Real Contexts, services and checkpoints store; a scripted model at the edge.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import type { Context } from 'cordis'
import { type Agent, type GenerateRequest, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import type { BudgetLimits } from '@cordis-subagents/agent'
import type { ToolFilter } from '@cordis-subagents/shared'
import type { Host } from './support/host.js'
import { sqliteHost } from './support/sqlite-host.js'
import { waitFor } from './support/host-process-wait.js'

const TOOLS = ['safe', 'danger', 'other']

/** What the child's model was offered at each call, and which tools ran, across both host starts. */
const offered: string[][] = []
const ran: string[] = []

const has = (request: GenerateRequest, name: string) => request.messages.some((m) => m.role === 'tool' && m.name === name)

/**
 * The child: asks whether to go on; once answered, calls every tool it is offered but the ask (each once), then answers
 * with the names of the tools that answered.
 */
const model = new ScriptedModel((request): ScriptedResponse => {
  const names = request.tools.map((tool) => tool.name)
  offered.push(names)
  if (!has(request, 'ask_parent')) return { toolCalls: [{ name: 'ask_parent', input: { question: 'Go on?' } }] }
  const left = names.filter((name) => name !== 'ask_parent' && !has(request, name))
  if (left.length) return { toolCalls: left.map((name) => ({ name, input: {} })) }
  const answered = request.messages.filter((m) => m.role === 'tool' && m.name !== 'ask_parent').map((m) => m.role === 'tool' ? m.name : '')
  return { text: `used ${answered.join(', ') || 'nothing'}` }
})

async function host(file: string): Promise<Host> {
  const h = await sqliteHost(file, 'restore-ceiling', {
    agents: { model: 'm' },
    before(ctx: Context) {
      for (const name of TOOLS) {
        const execute = () => { ran.push(name); return { content: `${name} ran` } }
        ctx.tools.register({ name, description: name, input: z.object({}), execute })
      }
      ctx.agents.registerModel('m', model)
      ctx.plugin(Spawn, { name: 'spawn', askParent: true })
    },
  })
  await h.ctx.subagents.ready('spawn')
  return h
}

describe('durable restore: a spawn child keeps its ceiling after a restart', function () {
  let dir: string
  const hosts: Host[] = []

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'restore-ceiling-'))
    offered.length = 0
    ran.length = 0
  })
  afterEach(async () => {
    for (const h of hosts.splice(0)) await h.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  interface Park { toolFilter?: ToolFilter; budget?: BudgetLimits; parent?: (h: Host) => Agent }

  /** Parks a child on the first start (its ceiling as given); returns its run id once the store has it parked. */
  async function parked(file: string, park: Park): Promise<string> {
    const first = await host(file)
    hosts.push(first)
    const parent = park.parent?.(first) ?? first.ctx.agents.create({ label: 'lead' })
    const run = await first.ctx.subagents.delegate('spawn', {
      prompt: 'tidy up', parent, signal: new AbortController().signal,
      ...park.toolFilter ? { toolFilter: park.toolFilter } : {}, ...park.budget ? { budget: park.budget } : {},
    })
    expect((await run.result).stopReason).to.equal('pending')
    await waitFor(async () => (await first.ctx.checkpoints.questions.pending({ runId: run.id })).length === 1, 'the question stored')
    await waitFor(async () => (await first.ctx.checkpoints.load(run.id))?.state === 'parked', 'the run parked in the store')
    await first.stop()
    return run.id
  }

  /** Resumes `runId` on a second start of the host. */
  async function resumed(file: string, runId: string) {
    const second = await host(file)
    hosts.push(second)
    await waitFor(() => second.ctx.subagents.pending().some((p) => p.runId === runId), 'the parked run listed')
    return second.ctx.subagents.resume(runId, 'yes')
  }

  it('the delegation\'s toolFilter: a denied tool is neither offered nor run after the restore', async () => {
    const file = join(dir, 'filter.db')
    const runId = await parked(file, { toolFilter: { deny: ['danger'] } })
    expect(offered).to.deep.equal([['safe', 'other', 'ask_parent']])

    const outcome = await resumed(file, runId)

    expect(outcome.stopReason, outcome.diagnostic).to.equal('completed')
    expect(outcome.output).to.equal('used safe, other')
    for (const names of offered) expect(names).to.not.include('danger')
    expect(ran).to.deep.equal(['safe', 'other'])
  })

  it('its parent\'s own narrower view at depth 1 and its own filter both hold at depth 2 after the restore', async () => {
    const file = join(dir, 'chain.db')
    const runId = await parked(file, {
      toolFilter: { deny: ['other'] },
      parent: (h) => h.ctx.agents.create({
        label: 'mid', parent: h.ctx.agents.create({ label: 'root' }), tools: h.ctx.tools.view().restrict({ deny: ['danger'] }),
      }),
    })
    expect(offered).to.deep.equal([['safe', 'ask_parent']])

    const outcome = await resumed(file, runId)

    expect(outcome.stopReason, outcome.diagnostic).to.equal('completed')
    expect(outcome.output).to.equal('used safe')
    expect(offered.slice(1)).to.deep.equal([['safe', 'ask_parent'], ['safe', 'ask_parent']])
    expect(ran).to.deep.equal(['safe'])
  })

  it('the tree budget: what the child had left when it parked still bounds it after the restore, as it would have live', async () => {
    // Live, no restart: 3 steps allowed, the ask took one, the tools one, and the answer the last.
    const live = await host(join(dir, 'live.db'))
    hosts.push(live)
    const run = await live.ctx.subagents.delegate('spawn', {
      prompt: 'tidy up', parent: live.ctx.agents.create({ label: 'lead' }), signal: new AbortController().signal, budget: { maxSteps: 2 },
    })
    expect((await run.result).stopReason).to.equal('pending')
    const inPlace = await run.resume('yes')
    await run.dispose()
    expect(inPlace).to.deep.include({ stopReason: 'budget', status: 'incomplete' })
    ran.length = 0

    const file = join(dir, 'budget.db')
    const runId = await parked(file, { budget: { maxSteps: 2 } })
    const outcome = await resumed(file, runId)

    expect(outcome).to.deep.include({ stopReason: 'budget', status: 'incomplete' })
    expect(outcome.budget).to.deep.include({ budget: 'steps', limit: 1 })
    expect(ran).to.deep.equal(['safe', 'danger', 'other'])
  })

  it('a checkpoint stored without a ceiling (before it was kept) still restores, under the fresh parent\'s view', async () => {
    const file = join(dir, 'old.db')
    const runId = await parked(file, { toolFilter: { deny: ['danger'] } })
    // Rewrite the stored checkpoint as an earlier version wrote it: the agent's checkpoint alone.
    const store = await host(file)
    const stored = (await store.ctx.checkpoints.load(runId))!.transcript as Record<string, unknown>
    expect(stored).to.have.property('ceiling')
    const { ceiling: _, ...agentOnly } = stored
    await store.ctx.checkpoints.save({ id: runId, transcript: agentOnly })
    await store.stop()
    hosts.splice(hosts.indexOf(store), 1)
    offered.length = 0

    const outcome = await resumed(file, runId)

    expect(outcome.stopReason, outcome.diagnostic).to.equal('completed')
    // What such a checkpoint gets: the tools of the journal's fresh root parent (every tool), as before.
    expect(offered[0]).to.deep.equal(['safe', 'danger', 'other', 'ask_parent'])
  })
})
