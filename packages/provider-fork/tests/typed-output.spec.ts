/// <reference types="mocha" />
import { expect } from 'chai'
import * as Fork from '@cordis-subagents/provider-fork'
import * as Spawn from '@cordis-subagents/provider-spawn'
import { type AgentEvent, FINAL_ANSWER_TOOL, type GenerateRequest, type Message, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import { FAILED, type Harness, delegation, loadTool, setup } from '../../provider-spawn/tests/helpers.js'

// Typed results over the in-process providers: the real subagent tool, service, runtime and loop;
// only the model is scripted. The child is told apart from the parent by what its request offers.

const SCHEMA = {
  type: 'object',
  properties: { answer: { type: 'string' }, score: { type: 'integer', minimum: 0 } },
  required: ['answer', 'score'],
  additionalProperties: false,
}
type ToolResult = Extract<AgentEvent, { type: 'tool-result' }>['result']

const GOOD = { answer: 'forty-two', score: 42 }
const BAD = { answer: 7, score: 42 }

/** One model for parent and child: the child's calls carry the output schema (a tool, or `output`). */
function model(child: (request: GenerateRequest, attempt: number) => ScriptedResponse, structured = false) {
  let attempts = 0
  const scripted = new ScriptedModel((request) => {
    const isChild = request.output !== undefined || request.tools.some((tool) => tool.name === FINAL_ANSWER_TOOL)
    if (isChild) return child(request, attempts++)
    const last = request.messages.at(-1) as Message
    return last.role === 'tool' ? { text: 'relayed' } : { toolCalls: [delegation('typed task', { id: 'd1' })] }
  })
  return Object.assign(scripted, { structuredOutput: structured })
}

const answer = (input: unknown, id = 'fa'): ScriptedResponse => ({ toolCalls: [{ id, name: FINAL_ANSWER_TOOL, input }] })

describe('typed results over spawn and fork', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  async function load(m: ScriptedModel, provider: 'spawn' | 'fork' = 'spawn', output: Record<string, unknown> = { schema: SCHEMA }) {
    h = await setup({ models: { main: m } })
    h.ctx.plugin(provider === 'spawn' ? Spawn : Fork)
    const tool = loadTool(h.ctx, { provider, output: output as never })
    await h.ctx.lifecycle.flush()
    return { h, tool }
  }

  /** Runs a root turn that delegates once; the delegation's tool result. */
  async function delegate(): Promise<ToolResult> {
    const root = h!.ctx.agents.create()
    let result: ToolResult | undefined
    const onEvent = (event: AgentEvent) => { if (event.type === 'tool-result') result = event.result }
    const run = await root.run('go', { onEvent })
    expect(run.stopReason).to.equal('completed')
    return result!
  }

  for (const provider of ['spawn', 'fork'] as const) {
    describe(provider, () => {
      it('valid: the parent gets the value as structured content and its JSON as text', async () => {
        const m = model(() => answer(GOOD))
        await load(m, provider)
        const result = await delegate()
        expect(result.isError).to.equal(undefined)
        expect(result.structured).to.deep.equal(GOOD)
        expect(JSON.parse(result.content)).to.deep.equal(GOOD)
        expect(result.metadata).to.deep.include({ stopReason: 'completed', status: 'done' })
        // The model-facing input of the delegation tool is unchanged; the child saw the schema as its final-answer tool.
        const childCall = m.requests.find((request) => request.tools.some((tool) => tool.name === FINAL_ANSWER_TOOL))!
        expect(childCall.tools.find((tool) => tool.name === FINAL_ANSWER_TOOL)!.parameters).to.deep.equal(SCHEMA)
        const parentTool = m.requests[0].tools.find((tool) => tool.name === 'subagent')!
        expect(Object.keys(parentTool.parameters.properties as object).sort()).to.deep.equal(['description', 'prompt'])
      })

      it('corrected once: the child reads the validation error and answers again', async () => {
        const seen: Message[][] = []
        const m = model((request, attempt) => {
          seen.push([...request.messages])
          return answer(attempt === 0 ? BAD : GOOD, `fa${attempt}`)
        })
        await load(m, provider)
        const result = await delegate()
        expect(result.structured).to.deep.equal(GOOD)
        expect(seen).to.have.length(2)
        const correction = seen[1].at(-1) as Extract<Message, { role: 'tool' }>
        expect(correction).to.deep.include({ role: 'tool', toolCallId: 'fa0', isError: true })
        expect(correction.content).to.include('/answer must be string')
      })

      it('invalid to the end: after maxCorrections the run ends invalid_output with the validation error', async () => {
        let attempts = 0
        const m = model(() => { attempts++; return answer(BAD, `fa${attempts}`) })
        await load(m, provider, { schema: SCHEMA, maxCorrections: 1 })
        const result = await delegate()
        expect(attempts).to.equal(2)
        expect(result.isError).to.equal(true)
        expect(result.structured).to.equal(undefined)
        expect(result.metadata).to.deep.include({ stopReason: 'invalid_output', status: 'error' })
        expect(result.content).to.include('does not match the output schema').and.include('/answer must be string')
        expect(h!.ends[0].result).to.deep.include({ stopReason: 'invalid_output', status: 'error' })
      })
    })
  }

  describe('a model with structured outputs', () => {
    it('gets the schema as request.output (no final-answer tool); a bad JSON text is corrected once', async () => {
      const requests: GenerateRequest[] = []
      const m = model((request, attempt) => {
        requests.push(request)
        return { text: attempt === 0 ? 'Here: {"answer": "x"' : `\`\`\`json\n${JSON.stringify(GOOD)}\n\`\`\`` }
      }, true)
      await load(m)
      const result = await delegate()
      expect(result.structured).to.deep.equal(GOOD)
      expect(requests).to.have.length(2)
      expect(requests[0].output).to.deep.equal({ name: FINAL_ANSWER_TOOL, schema: SCHEMA })
      expect(requests[0].tools.map((tool) => tool.name)).to.not.include(FINAL_ANSWER_TOOL)
      const correction = requests[1].messages.at(-1) as Message
      expect(correction.role).to.equal('user')
      expect(correction.content).to.include('not JSON')
    })

    it('text that parses but does not validate, every time, ends invalid_output', async () => {
      const m = model(() => ({ text: JSON.stringify(BAD) }), true)
      await load(m, 'spawn', { schema: SCHEMA, maxCorrections: 0 })
      const result = await delegate()
      expect(result.metadata).to.deep.include({ stopReason: 'invalid_output' })
      expect(result.content).to.include('after 0 correction(s)').and.include('/answer must be string')
    })
  })

  describe('bounds and bad schemas fail the load', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['a root that is not an object', { schema: { type: 'string' } }, 'must describe an object'],
      ['an unknown keyword', { schema: { type: 'object', propertees: {} } }, 'not a valid JSON Schema'],
      ['too large', { schema: { type: 'object', description: 'x'.repeat(20_000) } }, 'characters of JSON'],
      ['too deep', { schema: deep(20) }, 'levels deep'],
    ]
    for (const [what, output, words] of cases) {
      it(`${what}: INVALID_OUTPUT_SCHEMA`, async () => {
        const m = model(() => answer(GOOD))
        const { h, tool } = await load(m, 'spawn', output)
        expect(tool.status).to.equal(FAILED)
        const error = h.errors.find((e) => (e as { code?: string }).code === 'INVALID_OUTPUT_SCHEMA') as Error | undefined
        expect(error, h.errors.map(String).join('\n')).to.not.equal(undefined)
        expect(error!.message).to.include(words)
      })
    }

    it('more corrections than the most (10): the config schema refuses the load', async () => {
      const { h, tool } = await load(model(() => answer(GOOD)), 'spawn', { schema: SCHEMA, maxCorrections: 11 })
      expect(tool.status).to.equal(FAILED)
      expect(h.errors.map(String).join('\n')).to.include('output.maxCorrections expected number <= 10')
    })
  })
})

function deep(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'object' }
  for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { x: schema } }
  return schema
}
