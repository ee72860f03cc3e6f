// Issue 44 leftover: typed results in background mode. A background delegation over spawn with an
// `output` schema: the parent's model reads the value's JSON in the result's message, and the
// `message` event, a wait's result and the run's kept result carry the value itself, as a sync
// delegation's tool result does; `invalid_output` reads as it does in sync mode. Real tool, control
// verbs, service, spawn provider and loop; only the models are scripted.
import { expect } from 'chai'
import { type AgentEvent, FINAL_ANSWER_TOOL, type GenerateRequest, type Message, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { loadTool } from './support/background.js'
import { type Host, startHost } from './support/host.js'

const SCHEMA = {
  type: 'object',
  properties: { answer: { type: 'string' }, score: { type: 'integer', minimum: 0 } },
  required: ['answer', 'score'],
  additionalProperties: false,
}
const GOOD = { answer: 'forty-two', score: 42 }
const BAD = { answer: 7, score: 42 }

const isChild = (request: GenerateRequest) => request.tools.some((tool) => tool.name === FINAL_ANSWER_TOOL)
const answer = (input: unknown, id: string): ScriptedResponse => ({ toolCalls: [{ id, name: FINAL_ANSWER_TOOL, input }] })
const START = { id: 's1', name: 'subagent', input: { description: 'typed task', prompt: 'Score it.' } }

describe('typed results in background mode (spawn)', () => {
  let host: Host | undefined

  afterEach(async () => {
    await host?.stop()
    host = undefined
  })

  /**
   * A host with spawn, the tool in background mode with the schema, and the control verbs; one model
   * for parent and child (the child is offered the final-answer tool). `parent` scripts the parent's steps.
   */
  async function typedHost(
    child: (attempt: number) => ScriptedResponse, parent: (request: GenerateRequest, step: number) => ScriptedResponse, maxCorrections = 2,
  ) {
    host = await startHost()
    const { ctx } = host
    let attempts = 0
    let steps = 0
    const model = new ScriptedModel((request) => (isChild(request) ? child(attempts++) : parent(request, ++steps)))
    ctx.agents.registerModel('m', model)
    ctx.plugin(Spawn as never, { name: 'spawn' })
    await loadTool(ctx, { provider: 'spawn', mode: 'background', agentOptions: { model: 'm' }, output: { schema: SCHEMA, maxCorrections } })
    ctx.plugin(SubagentControl as never, {})
    await ctx.lifecycle.flush()
    const events: AgentEvent[] = []
    const agent = ctx.agents.create({ model: 'm' })
    return { ctx, model, agent, events, run: (prompt: string) => agent.run(prompt, { onEvent: (event) => events.push(event) }) }
  }

  /** The parent starts the delegation, answers at once (its turn waits for the result: `onTurnEnd: wait`), then reads its message. */
  const byMessage = (request: GenerateRequest, step: number): ScriptedResponse => (step === 1 ? { toolCalls: [START] }
    : step === 2 ? { text: 'started' } : { text: `read: ${(request.messages.at(-1) as Message).content.split('\n')[0]}` })

  const messages = (events: AgentEvent[]) => events.filter((event): event is Extract<AgentEvent, { type: 'message' }> => event.type === 'message')

  it('valid: the result message carries the value (and its JSON as text); the run\'s kept result has it too', async () => {
    const h = await typedHost((attempt) => answer(GOOD, `fa${attempt}`), byMessage)
    const result = await h.run('go')
    expect(result.stopReason).to.equal('completed')
    const [message] = messages(h.events)
    expect(message.structured).to.deep.equal(GOOD)
    expect(message.content).to.match(/^\[Background subagent bg-1 "typed task" finished with a typed result\]\n\n> /)
    // Its JSON, quoted as every background result's text is.
    expect(message.content.split('\n\n')[1]).to.equal(`> ${JSON.stringify(GOOD)}`)
    // What the parent's model read: the same text.
    expect((h.model.requests.at(-1)!.messages.at(-1) as Message).content).to.equal(message.content)
    const [end] = result.children!.listed
    const kept = await h.ctx.subagents.result(end.runId)
    expect(kept).to.deep.include({ stopReason: 'completed', source: 'memory' })
    expect(kept.value).to.deep.equal(GOOD)
    // Read again with subagent_result (by its handle): the whole output in one page carries the value too.
    const again = await h.agent.tools.execute({ name: 'subagent_result', input: { handle: 'bg-1' } }, { signal: new AbortController().signal, agent: h.agent, toolCallId: 'r1' })
    expect(again.isError, again.content).to.equal(undefined)
    expect(again.structured).to.deep.equal(GOOD)
  })

  it('corrected once: the child reads the validation error, answers again, and the value arrives through subagent_wait', async () => {
    const h = await typedHost((attempt) => answer(attempt === 0 ? BAD : GOOD, `fa${attempt}`), (_request, step) => (
      step === 1 ? { toolCalls: [START] }
        : step === 2 ? { toolCalls: [{ id: 'w1', name: 'subagent_wait', input: { handles: ['bg-1'] } }] }
          : step === 3 ? { toolCalls: [{ id: 'st1', name: 'subagent_status', input: {} }] } : { text: 'done' }))
    const result = await h.run('go')
    expect(result.stopReason).to.equal('completed')
    const seen = h.model.requests.filter(isChild).map((request) => request.messages)
    expect(seen).to.have.length(2)
    const correction = seen[1].at(-1) as Extract<Message, { role: 'tool' }>
    expect(correction).to.deep.include({ role: 'tool', toolCallId: 'fa0', isError: true })
    expect(correction.content).to.include('/answer must be string')
    const results = h.events.filter((event): event is Extract<AgentEvent, { type: 'tool-result' }> => event.type === 'tool-result')
    const waited = results.find((event) => event.name === 'subagent_wait')!.result
    // As a sync result carries its value: by handle (a wait may collect several), and on each collected entry.
    expect(waited.structured).to.deep.equal({ 'bg-1': GOOD })
    expect((waited.metadata as { collected: { structured?: unknown }[] }).collected[0].structured).to.deep.equal(GOOD)
    expect(waited.content).to.include('[Background subagent bg-1 "typed task" finished with a typed result]').and.include(`]\n\n> ${JSON.stringify(GOOD)}`)
    const status = results.find((event) => event.name === 'subagent_status')!.result
    expect(status.content).to.match(/^- bg-1 "typed task" \(spawn\): finished with a typed result after /)
    // Delivered once: by the wait, so no message.
    expect(messages(h.events)).to.have.length(0)
  })

  it('invalid to the end: the message reads invalid_output with the validation error, carries no value; status and the kept result say so', async () => {
    let attempts = 0
    const h = await typedHost(() => answer(BAD, `fa${attempts++}`), (request, step) => (
      step === 1 ? { toolCalls: [START] } : step === 2 ? { text: 'started' }
        : step === 3 ? { toolCalls: [{ id: 'st1', name: 'subagent_status', input: {} }] } : { text: 'noted' }), 1)
    const result = await h.run('go')
    expect(result.stopReason).to.equal('completed')
    expect(attempts).to.equal(2)
    const [message] = messages(h.events)
    expect(message.structured).to.equal(undefined)
    expect(message.content).to.match(/^\[Background subagent bg-1 "typed task" ended with an error \(invalid_output\)\]\n\n> /)
    expect(message.content).to.include('does not match the output schema').and.include('/answer must be string')
    const status = h.events.find((event): event is Extract<AgentEvent, { type: 'tool-result' }> => event.type === 'tool-result' && event.name === 'subagent_status')!
    expect(status.result.content).to.match(/^- bg-1 "typed task" \(spawn\): ended with an error \(invalid_output\) after /)
    const kept = await h.ctx.subagents.result(result.children!.listed[0].runId)
    expect(kept).to.deep.include({ stopReason: 'invalid_output', status: 'error' })
    expect(kept.value).to.equal(undefined)
    expect(result.children!.listed[0]).to.include({ state: 'invalid_output' })
  })
})
