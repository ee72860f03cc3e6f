/// <reference types="mocha" />
import { expect } from 'chai'
import { z } from 'zod'
import AgentDefinitions from '@cordis-subagents/definitions'
import * as Agents from '@cordis-subagents/definitions/agents'
import { type Agent, type GenerateRequest, type ModelToolCall, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import { startTeamHost } from '../../../test/support/team-host.js'
import type { Host } from '../../../test/support/host.js'
import { MAX_TEAM_TASKS, TeamBoard } from '../src/team/board.js'
import { controlVerbs } from '../src/verb-names.js'
import { call, deferred, type Harness, loadProvider, loadTool, ProviderControl, setup, until } from './helpers.js'

// A team that talks keeps one board per coordinator run (README, "A team that talks"): a run is one turn of the
// coordinator (its legs parked on a question and resumed included); the turn's end drops the board, and the next
// turn's first team call starts an empty one.

const TEAM = { alice: { does: 'Plans.', soul: 'member:alice' }, bob: { does: 'Works.', soul: 'member:bob' } }

const toolResults = (request: GenerateRequest) => request.messages.filter((message) => message.role === 'tool').map((message) => message.content)

/** The coordinator's reply: in turn `turn <k>` it calls `calls(k)` once, then answers. */
function coordinatorReply(request: GenerateRequest, calls: (turn: number) => Omit<ModelToolCall, 'id'>[]): ScriptedResponse {
  const at = request.messages.findLastIndex((message) => message.role === 'user' && String(message.content).startsWith('turn '))
  const turn = Number(String(request.messages[at].content).slice('turn '.length))
  return request.messages.slice(at).some((message) => message.role === 'tool') ? { text: `turn ${turn} done` } : { toolCalls: calls(turn) }
}

/** The boards kept with `agent` (the keeper's bag is the agent's own `keptWith`). */
function boardsKeptWith(agent: Agent): TeamBoard[] {
  const bag = (agent.keptWith ?? {}) as Record<symbol, unknown>
  return Object.getOwnPropertySymbols(bag).map((key) => bag[key]).filter((value): value is TeamBoard => value instanceof TeamBoard)
}

describe('a team that talks: one board per coordinator run', () => {
  describe('over real spawn children', () => {
    let host: Host

    beforeEach(async () => {
      host = await startTeamHost({ ...TEAM, coordinator: { does: 'Coordinates.', team: ['alice', 'bob'] } },
        [{ agent: 'coordinator', toolName: 'team', talk: true }])
    })
    afterEach(async () => { await host.stop() })

    const TURNS = MAX_TEAM_TASKS + 8

    it(`one coordinator, ${TURNS} turns, a task a turn: every turn's board starts empty and holds that turn's members only`, async function () {
      this.timeout(120_000)
      let posted = deferred<void>()
      let bobRuns = deferred<void>()
      const aliceSaw: string[][] = []
      let previousAlice = 'root/alice.0'
      host.ctx.agents.registerModel('team', new ScriptedModel(async (request) => {
        if (!request.system?.includes('member:')) {
          return coordinatorReply(request, () => [
            { name: 'team', input: { agent: 'alice', description: 'plan', prompt: 'Plan.' } },
            { name: 'team', input: { agent: 'bob', description: 'work', prompt: 'Work.' } },
          ])
        }
        const results = toolResults(request)
        if (request.system.includes('member:bob')) {
          bobRuns.resolve()
          await posted.promise
          return { text: 'bob done' }
        }
        const turn = aliceSaw.length
        switch (results.length) {
          case 0: return ScriptedModel.call('team_tasks', { action: 'add', title: `task ${turn}` })
          case 1: return ScriptedModel.call('team_tasks', { action: 'claim' })
          case 2: return ScriptedModel.call('team_tasks', { action: 'complete', id: Number(/#(\d+)/.exec(results[1])?.[1] ?? 1), note: `note ${turn}` })
          case 3: await bobRuns.promise; return ScriptedModel.call('team_post', { to: 'bob', message: `hello ${turn}` })
          // The alice of the turn before, by its handle id: a member of an ended run is nobody's teammate now.
          case 4: posted.resolve(); return ScriptedModel.call('team_post', { to: previousAlice, message: 'still there?' })
          case 5: return ScriptedModel.call('team_tasks', { action: 'list' })
          default: aliceSaw.push(results); return { text: 'alice done' }
        }
      }))
      const coordinator = host.ctx.agents.create({ model: 'team' })
      for (let turn = 0; turn < TURNS; turn++) {
        posted = deferred<void>()
        bobRuns = deferred<void>()
        const result = await coordinator.run(`turn ${turn}`)
        expect(result, `turn ${turn}`).to.include({ stopReason: 'completed', text: `turn ${turn} done` })
        const [added, claimed, completed, delivered, stranger, list] = aliceSaw[turn]
        const alice = /by (root\/alice\.\d+)/.exec(claimed)?.[1]
        expect([added, claimed, completed, list], `turn ${turn}`).to.deep.equal([
          `Added #1 [open] task ${turn}`, `Claimed #1 [claimed by ${alice}] task ${turn}`,
          `Completed #1 [done by ${alice}] task ${turn} — note ${turn}`, `#1 [done by ${alice}] task ${turn} — note ${turn}`,
        ])
        expect(delivered, `turn ${turn}`).to.match(/^Delivered to root\/bob\.\d+ \(bob\)\.$/)
        expect(stranger, `turn ${turn}`).to.equal(`NO_SUCH_MEMBER: No teammate named "${previousAlice}". Teammates: bob.`)
        // The run ended: the coordinator keeps no board, so nothing of the team grows with its turns.
        expect(boardsKeptWith(coordinator), `turn ${turn}`).to.deep.equal([])
        previousAlice = alice!
      }
      await coordinator.dispose()
    })
  })

  describe('members that outlive a run (a scripted provider: the test plays each member)', () => {
    let h: Harness
    let spawn: ProviderControl
    let coordinator: Agent
    /** The agent playing each member, by run id: a child of the coordinator, so it joins the run's board. */
    const members = new Map<string, Agent>()

    beforeEach(async () => {
      h = await setup()
      spawn = new ProviderControl()
      spawn.parkable = true
      spawn.onRun = (run) => {
        const member = h.ctx.agents.create({ parent: run.request.parent, label: run.request.agentOptions?.name })
        Object.assign(run.run, { childId: member.id })
        members.set(run.request.runId, member)
      }
      await loadProvider(h.ctx, spawn, { name: 'spawn' })
      h.ctx.plugin(AgentDefinitions)
      await h.ctx.lifecycle.flush()
      h.ctx.plugin(Agents, { agents: { ...TEAM, coordinator: { does: 'Coordinates.', team: ['alice', 'bob'] } } })
      h.ctx.agents.registerModel('coordinator', new ScriptedModel((request) => coordinatorReply(request, (turn) => [
        { name: 'crew', input: { agent: turn === 0 ? 'alice' : 'bob', description: 'work', prompt: 'Work.' } },
      ])))
      await h.ctx.lifecycle.flush()
      coordinator = h.ctx.agents.create({ model: 'coordinator', label: 'coordinator' })
    })
    afterEach(async () => {
      members.clear()
      await h.stop()
    })

    const tasks = async (agent: Agent, input: object) => (await call(h.ctx, input, { name: 'crew_tasks', agent })).content
    const post = async (agent: Agent, input: object) => (await call(h.ctx, input, { name: 'crew_post', agent })).content
    const started = async (count: number) => {
      await until(() => spawn.runs.length === count, `member ${count} started`)
      return { run: spawn.last, agent: members.get(spawn.last.request.runId)! }
    }

    it('escalate: a turn parked on a member\'s question keeps its board through the resume; its end closes it', async () => {
      await loadTool(h.ctx, { agent: 'coordinator', toolName: 'crew', talk: true, questions: 'escalate' })
      const first = coordinator.run('turn 0')
      const alice = await started(1)
      expect(await tasks(alice.agent, { action: 'add', title: 'plan' })).to.equal('Added #1 [open] plan')
      alice.run.ask('Which plan?')
      expect((await first).stopReason).to.equal('pending')
      expect(await tasks(alice.agent, { action: 'list' })).to.equal('#1 [open] plan')
      const resumed = coordinator.resume('the short one')
      await until(() => alice.run.answers.length === 1, 'alice got the answer')
      expect(await tasks(alice.agent, { action: 'claim' })).to.equal('Claimed #1 [claimed by coordinator/alice.1] plan')
      alice.run.complete('planned')
      expect(await resumed).to.include({ stopReason: 'completed', text: 'turn 0 done' })
      // The turn ended: a member still about (here: its agent not disposed yet) finds the board closed, and changes nothing.
      const closed = await tasks(alice.agent, { action: 'complete', id: 1 })
      expect(closed).to.match(/^BOARD_CLOSED: The coordinator run that started you has ended/)
      expect(boardsKeptWith(coordinator)).to.deep.equal([])
    })

    it('answer: a member parked when the run ended and answered in the next run is refused BOARD_CLOSED, and the next board never sees it', async () => {
      h.ctx.tools.register({ name: 'subagent_reply', description: 'reply', input: z.strictObject({}), execute: () => ({ content: '' }) })
      const withdraw = controlVerbs(h.ctx.subagents).use({ reply: 'subagent_reply' })
      await loadTool(h.ctx, { agent: 'coordinator', toolName: 'crew', talk: true })
      const first = coordinator.run('turn 0')
      const alice = await started(1)
      expect(await tasks(alice.agent, { action: 'add', title: 'plan' })).to.equal('Added #1 [open] plan')
      alice.run.ask('Which plan?')
      // The coordinator's model reads the question and ends its turn without answering: alice stays parked.
      expect(await first).to.include({ stopReason: 'completed', text: 'turn 0 done' })

      const second = coordinator.run('turn 1')
      const bob = await started(2)
      expect(await tasks(bob.agent, { action: 'list' })).to.equal('The task list is empty.')
      expect(await tasks(bob.agent, { action: 'add', title: 'fresh' })).to.equal('Added #1 [open] fresh')
      // Someone answers alice by run id while the next run is on: she works on, but her run's board is gone.
      void h.ctx.subagents.resume(alice.run.request.runId, 'the short one').catch(() => {})
      await until(() => alice.run.answers.length === 1, 'alice got the answer')
      for (const input of [{ action: 'add', title: 'late' }, { action: 'claim' }, { action: 'list' }]) {
        expect(await tasks(alice.agent, input), JSON.stringify(input)).to.match(/^BOARD_CLOSED: /)
      }
      expect(await post(alice.agent, { to: 'bob', message: 'hi' })).to.match(/^BOARD_CLOSED: /)
      expect(bob.agent.inbox.size).to.equal(0)
      expect(await tasks(bob.agent, { action: 'list' })).to.equal('#1 [open] fresh')
      expect(await post(bob.agent, { to: 'alice', message: 'hi' })).to.equal('NO_SUCH_MEMBER: No teammate named "alice". Teammates: (none yet).')
      bob.run.complete('worked')
      alice.run.complete('planned late')
      expect(await second).to.include({ stopReason: 'completed', text: 'turn 1 done' })
      expect(boardsKeptWith(coordinator)).to.deep.equal([])
      withdraw()
    })
  })
})
