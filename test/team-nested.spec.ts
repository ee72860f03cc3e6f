// Teams over real spawn children: a member's own delegation tool exists only when its definition has a
// team (and a team tool load serves it). The coordinator's tool offers `lead` and `reviewer`; `lead` has
// a team of its own (`writer`), served by a nested load `delegate_lead`. Each child's model records the
// tools it sees; the soul (system prompt) says which member it is.
import { expect } from 'chai'
import { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import type { Host } from './support/host.js'
import { startTeamHost } from './support/team-host.js'

const TEAM = {
  agents: {
    writer: { does: 'Writes.', soul: 'member:writer' },
    reviewer: { does: 'Reviews.', soul: 'member:reviewer' },
    lead: { does: 'Leads the writing.', soul: 'member:lead', team: ['writer'] },
    coordinator: { does: 'Coordinates.', team: ['lead', 'reviewer'] },
  },
}

describe('teams over spawn children: a child\'s delegation tool follows its definition\'s team', () => {
  let host: Host
  const seen = new Map<string, string[]>()

  beforeEach(async () => {
    seen.clear()
    host = await startTeamHost(TEAM.agents, [
      { agent: 'coordinator', toolName: 'delegate' },
      { agent: 'lead', toolName: 'delegate_lead', nested: true },
    ])
  })
  afterEach(async () => { await host.stop() })

  function model() {
    return new ScriptedModel((request: GenerateRequest) => {
      const who = /member:(\w+)/.exec(request.system ?? '')?.[1] ?? 'root'
      const tools = request.tools.map((tool) => tool.name).filter((name) => name.startsWith('delegate')).sort()
      if (!seen.has(who)) seen.set(who, tools)
      const results = request.messages.filter((message) => message.role === 'tool')
      if (who === 'root') {
        if (!results.length) {
          return {
            toolCalls: [
              { name: 'delegate', input: { agent: 'lead', description: 'lead it', prompt: 'Lead the writing.' } },
              { name: 'delegate', input: { agent: 'reviewer', description: 'review it', prompt: 'Review.' } },
            ],
          }
        }
        return { text: results.map((result) => result.content).join(' | ') }
      }
      if (who === 'lead') {
        if (!results.length) return ScriptedModel.call('delegate_lead', { agent: 'writer', description: 'write it', prompt: 'Write.' })
        return { text: `lead got: ${results[0].content}` }
      }
      return { text: `${who} done` }
    })
  }

  it('lead sees only the tool serving its team; writer and reviewer, without a team, see none', async () => {
    host.ctx.agents.registerModel('team', model())
    const agent = host.ctx.agents.create({ model: 'team' })
    const result = await agent.run('Go.', { signal: new AbortController().signal })
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('lead got: writer done | reviewer done')
    expect(seen.get('lead')).to.deep.equal(['delegate_lead'])
    expect(seen.get('writer')).to.deep.equal([])
    expect(seen.get('reviewer')).to.deep.equal([])
    await agent.dispose()
  })
})
