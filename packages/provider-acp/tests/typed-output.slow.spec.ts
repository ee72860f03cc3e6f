/// <reference types="mocha" />
import { expect } from 'chai'
import { type AgentEvent, ScriptedModel } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import * as AcpProvider from '@cordis-subagents/provider-acp'
import { assertNoLeftovers, FAST, fixtureArgs, harness, type Harness } from './helpers.js'

// Typed results over ACP: the fixture agent (a real subprocess on the ACP SDK) is asked for JSON in
// its prompt; its final text is parsed (a fenced block is fine) and validated on return. A child over
// ACP gets no correction round: an answer that does not match ends `invalid_output` at once.

type ToolResult = Extract<AgentEvent, { type: 'tool-result' }>['result']

const SCHEMA = {
  type: 'object',
  properties: { answer: { type: 'string' }, score: { type: 'integer' } },
  required: ['answer', 'score'],
}

describe('provider-acp: typed results', () => {
  let h: Harness

  beforeEach(async () => {
    h = await harness()
  })

  afterEach(async () => {
    await h.stop()
    assertNoLeftovers()
  })

  async function delegate(mode: string, arg: string | undefined, schema: Record<string, unknown> = SCHEMA): Promise<ToolResult> {
    const { ctx } = h
    ctx.plugin(SubagentService)
    ctx.plugin(AcpProvider, { command: process.execPath, args: fixtureArgs(mode, arg), ...FAST })
    ctx.plugin(SubagentTool, { provider: 'acp', toolName: 'subagent_acp', output: { schema } })
    await ctx.lifecycle.flush()
    ctx.agents.registerModel('scripted', new ScriptedModel([
      ScriptedModel.call('subagent_acp', { description: 'Ask the ACP child', prompt: 'Rate the answer.' }),
      { text: 'done' },
    ]))
    const parent = ctx.agents.create({ model: 'scripted' })
    let result: ToolResult | undefined
    await parent.run('Delegate.', { onEvent: (event) => { if (event.type === 'tool-result') result = event.result } })
    await parent.dispose()
    return result!
  }

  it('valid: a fenced JSON answer comes back as structured content and its JSON text', async () => {
    const result = await delegate('say', 'Here it is:\n```json\n{"answer": "42", "score": 9}\n```')
    expect(result.isError).to.equal(undefined)
    expect(result.structured).to.deep.equal({ answer: '42', score: 9 })
    expect(result.content).to.equal('{"answer":"42","score":9}')
  })

  it('the child is asked for JSON matching the schema in its prompt', async () => {
    // `echo` answers with a JSON object of what it received (output schemas take no `pattern`: the instruction is checked below).
    const schema = { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] }
    const result = await delegate('echo', undefined, schema)
    expect(result.isError, result.content).to.equal(undefined)
    const { prompt } = result.structured as { prompt: string }
    expect(prompt.startsWith('Rate the answer.')).to.equal(true)
    expect(prompt).to.include('matches this JSON Schema')
    expect(prompt).to.include(JSON.stringify(schema))
  })

  it('invalid: the run ends invalid_output at once (no correction round), quoting the validation error', async () => {
    const result = await delegate('say', '{"answer": 42}')
    expect(result.isError).to.equal(true)
    expect(result.structured).to.equal(undefined)
    expect(result.metadata).to.deep.include({ stopReason: 'invalid_output', status: 'error' })
    expect(result.content).to.include('no correction round').and.include('/answer must be string')
  })

  it('not JSON at all: invalid_output saying so', async () => {
    const result = await delegate('say', 'The answer is 42.')
    expect(result.metadata).to.deep.include({ stopReason: 'invalid_output' })
    expect(result.content).to.include('not JSON')
  })
})
