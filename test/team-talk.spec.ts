// A team that talks (issue 43 item 5), over real spawn children: the coordinator's team tool (`talk: true`)
// starts two members in one step; they share the task list of the coordinator's run and post to each other's
// inboxes through the board that holds their handles. Each member's scripted model is told apart by its soul.
import { expect } from 'chai'
import { AgentHandle, type ChatModel, type GenerateRequest, type Message, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import { deferred, until } from './support/async.js'
import type { Host } from './support/host.js'
import { startTeamHost } from './support/team-host.js'

const TEAM = {
  agents: {
    alice: { does: 'Plans the work.', soul: 'member:alice' },
    bob: { does: 'Does the work.', soul: 'member:bob' },
    coordinator: { does: 'Coordinates.', team: ['alice', 'bob'] },
  },
}

const results = (request: GenerateRequest) => request.messages.filter((message): message is Extract<Message, { role: 'tool' }> => message.role === 'tool')

describe('a team that talks: members share a task list and post to each other through their handles', () => {
  let host: Host

  beforeEach(async () => {
    host = await startTeamHost(TEAM.agents, [{ agent: 'coordinator', toolName: 'team', talk: true }])
  })
  afterEach(async () => { await host.stop() })

  it('two members exchange a message and claim tasks from the shared list, each task once', async () => {
    const delivered = deferred<void>()
    const bobClaimed = deferred<void>()
    const seen = new Map<string, string[]>()
    const requests = new Map<string, GenerateRequest[]>()
    const script: Record<string, (request: GenerateRequest, step: number) => ScriptedResponse | Promise<ScriptedResponse>> = {
      root: (request) => {
        if (!results(request).length) {
          return { toolCalls: [
            { name: 'team', input: { agent: 'alice', description: 'plan', prompt: 'Plan the work.' } },
            { name: 'team', input: { agent: 'bob', description: 'work', prompt: 'Do the work.' } },
          ] }
        }
        return { text: results(request).map((result) => result.content).join(' | ') }
      },
      alice: async (request, step) => {
        const last = results(request).at(-1)?.content ?? ''
        switch (step) {
          case 0: return { toolCalls: [
            { name: 'team_tasks', input: { action: 'add', title: 'write the tests' } },
            { name: 'team_tasks', input: { action: 'add', title: 'write the docs' } },
          ] }
          case 1: return ScriptedModel.call('team_post', { to: 'bob', message: 'Two tasks are on the list; take the first.' })
          case 2:
            if (last.startsWith('Delivered to')) delivered.resolve()
            // Alice goes for task 1 too, but only after bob has it: her claim must be refused.
            await bobClaimed.promise
            return ScriptedModel.call('team_tasks', { action: 'claim', id: 1 })
          case 3: return ScriptedModel.call('team_tasks', { action: 'claim' })
          case 4: return ScriptedModel.call('team_tasks', { action: 'complete', id: 2, note: 'docs written' })
          default: return { text: `alice: ${last}` }
        }
      },
      bob: async (request, step) => {
        if (step === 0) {
          // Bob's first model call is in flight when alice's message lands: he reads it before his next one.
          await delivered.promise
          return ScriptedModel.call('team_tasks', { action: 'claim', id: 1 })
        }
        if (step === 1 && results(request).at(-1)?.content.startsWith('Claimed #1')) bobClaimed.resolve()
        if (step === 1) return ScriptedModel.call('team_tasks', { action: 'complete', id: 1, note: 'tests written' })
        if (step === 2) return ScriptedModel.call('team_tasks', { action: 'list' })
        return { text: 'bob done' }
      },
    }
    host.ctx.agents.registerModel('team', new ScriptedModel((request: GenerateRequest) => {
      const who = /member:(\w+)/.exec(request.system ?? '')?.[1] ?? 'root'
      const mine = requests.get(who) ?? []
      requests.set(who, [...mine, request])
      if (!seen.has(who)) seen.set(who, request.tools.map((tool) => tool.name).sort())
      return script[who](request, mine.length)
    }))
    const agent = host.ctx.agents.create({ model: 'team' })
    const result = await agent.run('Go.', { signal: new AbortController().signal })
    expect(result.stopReason).to.equal('completed')

    // Bob read alice's message as one block labelled with her handle id, before his second model call.
    const bobSecond = requests.get('bob')![1].messages
    const inbox = bobSecond.filter((message) => message.role === 'user' && message.content.startsWith('[inbox:'))
    expect(inbox).to.have.length(1)
    expect(inbox[0].content).to.match(/^\[inbox: 1 message\]\n\n\[from root\/alice\.1\]\n> Two tasks are on the list; take the first\.$/)
    // Task 1 went to exactly one of them: alice's claim of it was refused with its code.
    const aliceResults = requests.get('alice')!.at(-1)!.messages.filter((message) => message.role === 'tool').map((message) => message.content)
    expect(aliceResults.some((content) => /^ALREADY_CLAIMED: Task 1 was claimed by root\/bob\.2/.test(content))).to.equal(true)
    expect(aliceResults).to.include.members(['Delivered to root/bob.2 (bob).'])
    const list = results(requests.get('bob')!.at(-1)!).at(-1)!.content.split('\n')
    expect(list).to.have.length(2)
    expect(list[0]).to.match(/^#1 \[done by root\/bob\.2\] write the tests — tests written$/)
    expect(list[1]).to.match(/^#2 \[.*\] write the docs/)
    // Alice then took the next open task (2) and completed it: every task claimed once, none lost.
    expect(aliceResults).to.include.members([
      'Claimed #2 [claimed by root/alice.1] write the docs', 'Completed #2 [done by root/alice.1] write the docs — docs written',
    ])
    expect(result.text).to.include('bob done')

    // The members' child views have the talk tools (an agent that is no member is refused: next test).
    expect(seen.get('alice')).to.include.members(['team_post', 'team_tasks'])
    expect(seen.get('bob')).to.include.members(['team_post', 'team_tasks'])
    await agent.dispose()
  })

  it('an agent that is not a running member of the team is refused with NOT_A_MEMBER, and the message goes nowhere', async () => {
    host.ctx.agents.registerModel('outsider', new ScriptedModel([
      ScriptedModel.call('team_post', { to: 'bob', message: 'hi' }),
      ScriptedModel.call('team_tasks', { action: 'add', title: 'sneaky' }),
      { text: 'tried' },
    ]))
    const agent = host.ctx.agents.create({ model: 'outsider' })
    const result = await agent.run('Go.')
    expect(result.stopReason).to.equal('completed')
    const contents = agent.transcript.messages.filter((message) => message.role === 'tool').map((message) => message.content)
    expect(contents).to.have.length(2)
    for (const content of contents) expect(content).to.match(/^NOT_A_MEMBER: /)
    await agent.dispose()
  })

  it('closing the coordinator closes its running members first (leaf first), each state stays readable; a post to a closed one is refused', async () => {
    const model: ChatModel = {
      generate: (request) => {
        const who = /member:(\w+)/.exec(request.system ?? '')?.[1]
        if (!who) {
          return Promise.resolve({ text: '', finishReason: 'tool-calls', toolCalls: [
            { id: 'a', name: 'team', input: { agent: 'alice', description: 'plan', prompt: 'Plan.' } },
            { id: 'b', name: 'team', input: { agent: 'bob', description: 'work', prompt: 'Work.' } },
          ] })
        }
        // Members think until they are stopped (they honour their signal).
        return new Promise((_resolve, reject) => request.signal?.addEventListener('abort', () => reject(request.signal!.reason), { once: true }))
      },
    }
    host.ctx.agents.registerModel('team', model)
    const agent = host.ctx.agents.create({ model: 'team' })
    const running = agent.run('Go.')
    await until(() => agent.children.length === 2 && agent.children.every((child) => child.running))
    const [alice, bob] = agent.children
    const order: string[] = []
    for (const member of [agent, alice, bob]) {
      const dispose = member.dispose.bind(member)
      member.dispose = () => { order.push(member.handleId); return dispose() }
    }
    const final = await AgentHandle.of(agent).close({ shutdownMs: 20_000 })
    expect(order.at(-1)).to.equal('root')
    expect(order.slice(0, 2).sort()).to.deep.equal([alice.handleId, bob.handleId].sort())
    expect(final).to.deep.include({ id: 'root', status: 'closed', forced: false })
    expect(AgentHandle.of(alice).state).to.deep.include({ status: 'closed', forced: false, transcriptLength: 1 })
    expect((await running).stopReason).to.equal('aborted')
    expect(() => AgentHandle.of(bob).post('still there?', { from: AgentHandle.of(alice) })).to.throw(/disposed/)
  })
})
