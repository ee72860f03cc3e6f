// A team member whose definition asks for a budget note and tell_parent gets them although the tool load does not;
// a member without them follows the load (real definitions, spawn, subagent-tool; issue 44 item 3, "per tool load or definition").
import { expect } from 'chai'
import { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import type { Host } from './support/host.js'
import { startTeamHost } from './support/team-host.js'

describe('teams: a member definition\'s budgetNote and tellParent', () => {
  let host: Host

  beforeEach(async () => {
    host = await startTeamHost({
      noted: { does: 'Sees its budget.', soul: 'member:noted', budgetNote: true, tellParent: true },
      plain: { does: 'Follows the load.', soul: 'member:plain' },
      coordinator: { does: 'Coordinates.', team: ['noted', 'plain'] },
    }, [{ agent: 'coordinator', toolName: 'delegate', budget: { maxSteps: 4 } }])
  })
  afterEach(async () => { await host.stop() })

  it('the member that asks sees the note and gets tell_parent; the other gets neither', async () => {
    const seen: Record<string, GenerateRequest[]> = { noted: [], plain: [] }
    host.ctx.agents.registerModel('team', new ScriptedModel((request: GenerateRequest) => {
      const member = /member:(noted|plain)/.exec(request.system ?? '')?.[1]
      if (member) {
        seen[member]!.push(request)
        return { text: `${member} done` }
      }
      const done = request.messages.filter((message) => message.role === 'tool').length
      if (done === 0) return ScriptedModel.call('delegate', { agent: 'noted', description: 'noted', prompt: 'Go.' })
      if (done === 1) return ScriptedModel.call('delegate', { agent: 'plain', description: 'plain', prompt: 'Go.' })
      return { text: 'ok' }
    }))
    const agent = host.ctx.agents.create({ model: 'team' })
    expect((await agent.run('Go.')).stopReason).to.equal('completed')
    expect(seen.noted).to.have.length(1)
    expect(seen.plain).to.have.length(1)
    expect(seen.noted[0]!.system).to.include('[Budget]')
    expect(seen.noted[0]!.tools.map((tool) => tool.name)).to.include('tell_parent')
    expect(seen.plain[0]!.system).to.not.include('[Budget]')
    expect(seen.plain[0]!.tools.map((tool) => tool.name)).to.not.include('tell_parent')
    await agent.dispose()
  })
})
