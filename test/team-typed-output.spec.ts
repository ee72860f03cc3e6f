// A team member whose definition has an output schema answers through final_answer and the
// coordinator's tool result carries the validated value (real definitions, spawn, subagent-tool).
import { expect } from 'chai'
import { type AgentEvent, FINAL_ANSWER_TOOL, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import type { Host } from './support/host.js'
import { startTeamHost } from './support/team-host.js'

const SCHEMA = { type: 'object', properties: { verdict: { type: 'string' } }, required: ['verdict'] }

describe('teams: a member definition\'s output schema', () => {
  let host: Host

  beforeEach(async () => {
    host = await startTeamHost({
      judge: { does: 'Judges.', soul: 'member:judge', output: { schema: SCHEMA } },
      coordinator: { does: 'Coordinates.', team: ['judge'] },
    }, [{ agent: 'coordinator', toolName: 'delegate' }])
  })
  afterEach(async () => { await host.stop() })

  it('the member is offered final_answer with its schema; the tool result carries the value', async () => {
    const offered: GenerateRequest[] = []
    host.ctx.agents.registerModel('team', new ScriptedModel((request: GenerateRequest) => {
      if (/member:judge/.test(request.system ?? '')) {
        offered.push(request)
        return { toolCalls: [{ name: FINAL_ANSWER_TOOL, input: { verdict: 'fine' } }] }
      }
      const results = request.messages.filter((message) => message.role === 'tool')
      if (!results.length) return ScriptedModel.call('delegate', { agent: 'judge', description: 'judge it', prompt: 'Judge.' })
      return { text: 'ok' }
    }))
    const agent = host.ctx.agents.create({ model: 'team' })
    const results: Extract<AgentEvent, { type: 'tool-result' }>['result'][] = []
    const run = await agent.run('Go.', { onEvent: (event) => { if (event.type === 'tool-result') results.push(event.result) } })
    expect(run.stopReason).to.equal('completed')
    expect(offered[0]!.tools.find((tool) => tool.name === FINAL_ANSWER_TOOL)!.parameters).to.deep.equal(SCHEMA)
    expect(results[0]!.structured).to.deep.equal({ verdict: 'fine' })
    await agent.dispose()
  })
})
