import { expect } from 'chai'
import { FINAL_ANSWER_TOOL, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import { createInProcessProvider } from '@cordis-subagents/provider-spawn'
import type { ProviderStartRequest } from '@cordis-subagents/subagents-service'
import { type Harness, setup, tick } from './helpers.js'

const SCHEMA = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false }
const users = (request: GenerateRequest) => request.messages.filter((message) => message.role === 'user').map((message) => message.content)

/** A typed child steered while it works: the follow-up's turn is typed too, and the run's value is that turn's answer. */
describe('in-process provider: a typed child with a follow-up turn', () => {
  let h: Harness

  beforeEach(async () => {
    h = await setup({ models: { m: new ScriptedModel([{ text: 'unused' }]) } })
  })
  afterEach(async () => { await h.ctx.stop() })

  it('the follow-up turn is offered the schema and the result carries its value (not the first turn\'s, and not none)', async () => {
    let send!: (message: string) => void
    const model = new ScriptedModel([
      async () => {
        await tick(1) // the hand-over happens after the child's first model call began
        send('count again')
        return { toolCalls: [{ id: 'fa1', name: FINAL_ANSWER_TOOL, input: { n: 1 } }] }
      },
      (request) => {
        expect(request.tools.find((tool) => tool.name === FINAL_ANSWER_TOOL)?.parameters).to.deep.equal(SCHEMA)
        expect(users(request).at(-1)).to.equal('count again')
        return { toolCalls: [{ id: 'fa2', name: FINAL_ANSWER_TOOL, input: { n: 2 } }] }
      },
    ])
    h.ctx.agents.registerModel('typed', model)
    const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false })
    const parent = h.ctx.agents.create({ model: 'm' })
    const request: ProviderStartRequest = {
      prompt: 'count', parent, signal: new AbortController().signal, runId: 'typed-1', depth: 1, agentOptions: { model: 'typed' }, output: { schema: SCHEMA },
    }
    const run = await provider.start(request)
    send = (message) => run.send!(message)
    const result = await run.result
    expect(result.stopReason).to.equal('completed')
    expect(model.requests).to.have.length(2)
    expect(JSON.parse(result.output)).to.deep.equal({ n: 2 })
    expect(result.value).to.deep.equal({ n: 2 })
    await run.dispose()
  })
})
