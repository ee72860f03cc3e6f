// A typed parent (an output schema) with `onTurnEnd: 'wait'` (the default) must not end its turn on
// its typed answer while a background child still runs: the turn waits for the child, its model reads
// the result (one more step) and the answer it ends on stands. With `onTurnEnd: 'end'` the typed answer
// ends the turn at once and the child's result is reported unread. Real tool, service, spawn and loop;
// scripted models; the child ends only when the test lets it (order, counts and states, no durations).
import { expect } from 'chai'
import { type Deferred, deferred } from '@cordis-subagents/shared'
import { type AgentEvent, type ChatModel, FINAL_ANSWER_TOOL, type GenerateRequest, type Message, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import { type Host, startHost } from './support/host.js'
import { eventually } from './support/async.js'

const SCHEMA = { type: 'object', properties: { verdict: { type: 'string' } }, required: ['verdict'], additionalProperties: false }
const lastContent = (request: GenerateRequest) => (request.messages.at(-1) as Message).content

describe('a typed turn with background children running: onTurnEnd wait / end', () => {
  let host: Host | undefined

  afterEach(async () => {
    await host?.stop()
    host = undefined
  })

  /**
   * A typed root whose step 1 starts background child `a` and whose every later step answers at once
   * (final_answer), its verdict naming the step and whether the child's result was in what it read.
   * The child ends when `gate` is resolved; the test resolves it when the turn reports `waiting`.
   */
  async function scenario(onTurnEnd: 'wait' | 'end', structuredOutput: boolean) {
    const gate: Deferred<void> = deferred<void>()
    host = await startHost({
      before(ctx) {
        ctx.plugin(Spawn, { name: 'spawn' })
        ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'bg', mode: 'background', onTurnEnd })
      },
    })
    const parentRequests: GenerateRequest[] = []
    const order: string[] = []
    const model = new ScriptedModel(async (request: GenerateRequest) => {
      if ((request.system ?? '').includes('You are a subagent')) {
        await gate.promise
        order.push('child ends')
        return { text: 'finding a' }
      }
      parentRequests.push(request)
      const step = parentRequests.length
      if (step === 1) return { toolCalls: [{ id: 'start-a', name: 'bg', input: { description: 'a', prompt: 'Task a' } }] }
      const read = request.messages.some((message) => message.role === 'user' && message.content.startsWith('[Background subagent bg-1'))
      const verdict = `step ${step}${read ? ' after reading a' : ''}`
      order.push(`answer: ${verdict}`)
      return structuredOutput ? { text: JSON.stringify({ verdict }) } : { toolCalls: [{ id: `fa${step}`, name: FINAL_ANSWER_TOOL, input: { verdict } }] }
    })
    // A model with structured outputs answers in JSON text; one without calls the final-answer tool.
    const chat: ChatModel = structuredOutput ? { structuredOutput: true, generate: (request) => model.generate(request) } : model
    host.ctx.agents.registerModel('m', chat)
    const agent = host.ctx.agents.create({ model: 'm', maxSteps: 5, output: { schema: SCHEMA } })
    const onEvent = (event: AgentEvent) => {
      if (event.type !== 'waiting') return
      order.push('waiting')
      gate.resolve()
    }
    const result = await agent.run('Review it.', { onEvent })
    order.push('turn ends')
    return { result, parentRequests, order, agent, gate }
  }

  for (const structuredOutput of [false, true]) {
    const via = structuredOutput ? 'structured output' : 'the final_answer tool'
    it(`wait (${via}): the turn waits for the child, reads its result, and ends on the answer given after reading it`, async () => {
      const { result, parentRequests, order } = await scenario('wait', structuredOutput)
      expect(order).to.deep.equal(['answer: step 2', 'waiting', 'child ends', 'answer: step 3 after reading a', 'turn ends'])
      expect(result.stopReason).to.equal('completed')
      expect(result.steps).to.equal(3)
      expect(lastContent(parentRequests[2])).to.match(/^\[Background subagent bg-1 "a" finished\]\n\n> finding a$/)
      expect(result.value).to.deep.equal({ verdict: 'step 3 after reading a' })
      expect(result.children).to.deep.include({ total: 1, unread: 0 })
      expect(result.children!.states).to.deep.equal({ completed: 1 })
    })
  }

  it('end: the typed answer ends the turn while the child runs; its result arrives later, reported unread', async () => {
    const { result, parentRequests, order, agent, gate } = await scenario('end', false)
    expect(order).to.deep.equal(['answer: step 2', 'turn ends'])
    expect(result.stopReason).to.equal('completed')
    expect(result.steps).to.equal(2)
    expect(parentRequests).to.have.length(2)
    expect(result.value).to.deep.equal({ verdict: 'step 2' })
    expect(result.children!.states).to.deep.equal({ running: 1 })
    gate.resolve()
    await eventually(() => agent.inbox.size > 0 || undefined, 'the child\'s result posted')
    const account = host!.ctx.subagents.account(agent)!
    expect(account).to.deep.include({ total: 1, unread: 1 })
    expect(account.listed[0]).to.include({ label: 'a', state: 'completed', unread: true })
  })
})
