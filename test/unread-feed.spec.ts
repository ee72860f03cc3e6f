// Issue 44 item 4, `unreadResults: 'feed'`: a parent's turn about to end on its (typed) answer while a
// background result sits delivered but unread in its inbox takes exactly one more step so its model
// reads it, once per turn and only with a step left under maxSteps; the default (`report`) ends the
// turn and reports the result unread. (A turn that answers in text already reads waiting messages
// before it ends while a step is left: the agent's loop.) Real tool, service, spawn and loop; the
// models are scripted, and each child ends while the parent's model call is in flight.
import { expect } from 'chai'
import { type Deferred, deferred } from '@cordis-subagents/shared'
import { FINAL_ANSWER_TOOL, type GenerateRequest, type Message, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import { type Host, startHost } from './support/host.js'
import { eventually } from './support/async.js'

const SCHEMA = { type: 'object', properties: { verdict: { type: 'string' } }, required: ['verdict'], additionalProperties: false }
const final = (verdict: string, id: string): ScriptedResponse => ({ toolCalls: [{ id, name: FINAL_ANSWER_TOOL, input: { verdict } }] })
const start = (label: string) => ({ id: `start-${label}`, name: 'bg', input: { description: label, prompt: `Task ${label}` } })
const lastContent = (request: GenerateRequest) => (request.messages.at(-1) as Message).content

describe('background results unread at a turn\'s end: unreadResults feed / report', () => {
  let host: Host | undefined

  afterEach(async () => {
    await host?.stop()
    host = undefined
  })

  /**
   * A typed root whose first step starts background children `labels` (onTurnEnd: end, no hold) and
   * whose every later step first lets the next child end and waits until its result is in the inbox,
   * then answers (final_answer). Returns the run's result and the root's model requests.
   */
  async function scenario(options: { unreadResults?: 'feed' | 'report'; maxSteps: number; labels: string[] }) {
    const gates = new Map<string, Deferred<void>>(options.labels.map((label) => [label, deferred<void>()]))
    host = await startHost({
      before(ctx) {
        ctx.plugin(Spawn, { name: 'spawn' })
        const tool: Record<string, unknown> = { provider: 'spawn', toolName: 'bg', mode: 'background', onTurnEnd: 'end' }
        if (options.unreadResults) tool.unreadResults = options.unreadResults
        ctx.plugin(SubagentTool, tool)
      },
    })
    const parentRequests: GenerateRequest[] = []
    let released = 0
    let steps = 0
    const model = new ScriptedModel(async (request: GenerateRequest) => {
      if ((request.system ?? '').includes('You are a subagent')) {
        const label = /Task (\w+)/.exec(lastContent(request))![1]
        await gates.get(label)!.promise
        return { text: `finding ${label}` }
      }
      parentRequests.push(request)
      steps++
      if (steps === 1) return { toolCalls: options.labels.map(start) }
      const next = options.labels[released++]
      if (next) {
        gates.get(next)!.resolve()
        // Its result is posted to the inbox while this model call is in flight (read at no step yet).
        await eventually(() => agent.inbox.size > 0 || undefined, `the result of ${next} posted`)
      }
      return final(`verdict ${steps}`, `fa${steps}`)
    })
    host.ctx.agents.registerModel('m', model)
    const agent = host.ctx.agents.create({ model: 'm', maxSteps: options.maxSteps, output: { schema: SCHEMA } })
    const result = await agent.run('Review it.')
    return { result, parentRequests, agent }
  }

  it('feed: the turn takes one more step, its model reads the result and answers again; nothing is left unread', async () => {
    const { result, parentRequests } = await scenario({ unreadResults: 'feed', maxSteps: 5, labels: ['a'] })
    expect(result.stopReason).to.equal('completed')
    expect(result.steps).to.equal(3)
    expect(parentRequests).to.have.length(3)
    expect(lastContent(parentRequests[2])).to.match(/^\[Background subagent bg-1 "a" finished\]\n\n> finding a$/)
    expect(result.value).to.deep.equal({ verdict: 'verdict 3' })
    expect(result.children).to.deep.include({ total: 1, unread: 0 })
  })

  it('report (the default): the turn ends on its answer and the result is reported unread', async () => {
    const { result, parentRequests, agent } = await scenario({ maxSteps: 5, labels: ['a'] })
    expect(result.steps).to.equal(2)
    expect(parentRequests).to.have.length(2)
    expect(result.value).to.deep.equal({ verdict: 'verdict 2' })
    expect(result.children).to.deep.include({ total: 1, unread: 1 })
    expect(agent.inbox.size).to.equal(1)
  })

  it('feed with no step left under maxSteps: not fed (never past the limit); reported unread', async () => {
    const { result, parentRequests } = await scenario({ unreadResults: 'feed', maxSteps: 2, labels: ['a'] })
    expect(result.stopReason).to.equal('completed')
    expect(result.steps).to.equal(2)
    expect(parentRequests).to.have.length(2)
    expect(result.children).to.deep.include({ total: 1, unread: 1 })
  })

  it('feed is once per turn: a second result that arrives during the fed step stays unread', async () => {
    const { result, parentRequests } = await scenario({ unreadResults: 'feed', maxSteps: 10, labels: ['a', 'b'] })
    expect(result.steps).to.equal(3)
    expect(parentRequests).to.have.length(3)
    expect(lastContent(parentRequests[2])).to.match(/^\[Background subagent bg-1 "a" finished\]/)
    expect(result.value).to.deep.equal({ verdict: 'verdict 3' })
    expect(result.children).to.deep.include({ total: 2, unread: 1 })
    expect(result.children!.listed.find((entry) => entry.unread)).to.include({ label: 'b' })
  })
})
