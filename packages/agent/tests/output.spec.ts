/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import {
  AgentError, FINAL_ANSWER_TOOL, MAX_OUTPUT_VALUE_CHARS, outputContract, parseJson, ScriptedModel, type ToolMessage,
} from '@cordis-subagents/agent'
import { isBalanced, setup, toolPlugin } from './helpers.js'

const SCHEMA = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }

describe('typed results: the output contract and the loop', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  describe('outputContract', () => {
    it('checks values and quotes the validation error by path', () => {
      const contract = outputContract({ schema: SCHEMA })
      expect(contract.maxCorrections).to.equal(2)
      expect(contract.check({ n: 3 })).to.equal(undefined)
      expect(contract.check({ n: 'three' })).to.equal('/n must be integer')
      expect(contract.check({})).to.equal('(root) must have required property \'n\'')
    })

    it('bounds the value: a value over MAX_OUTPUT_VALUE_CHARS of JSON does not validate', () => {
      const contract = outputContract({ schema: { type: 'object' } })
      expect(contract.check({ s: 'x'.repeat(MAX_OUTPUT_VALUE_CHARS) })).to.include(`the most is ${MAX_OUTPUT_VALUE_CHARS}`)
    })

    it('parses JSON alone or in one fenced block, and says when it is not JSON', () => {
      expect(parseJson(' {"n": 1} ')).to.deep.equal({ value: { n: 1 } })
      expect(parseJson('```json\n{"n": 2}\n```')).to.deep.equal({ value: { n: 2 } })
      expect(parseJson('The answer:\n```\n{"n": 3}\n```\nDone.')).to.deep.equal({ value: { n: 3 } })
      expect(parseJson('n is 4')).to.have.property('problem').that.includes('not JSON')
      expect(parseJson('')).to.deep.equal({ problem: 'the answer is empty, not JSON' })
    })

    it('a bad option fails create with INVALID_OUTPUT_SCHEMA', () => {
      for (const output of [null, { schema: 'x' }, { schema: SCHEMA, maxCorrections: -1 }, { schema: { type: 'object', required: 'n' } }]) {
        const error = (() => {
          try {
            ctx.agents.create({ output: output as never })
          } catch (error) {
            return error
          }
        })()
        expect(error, JSON.stringify(output)).to.be.instanceOf(AgentError).and.have.property('code', 'INVALID_OUTPUT_SCHEMA')
      }
    })

    it('refuses `pattern` and `patternProperties` (a model\'s answer never meets a backtracking regex); a property named "pattern" is fine', () => {
      const evil = { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } }
      const keyed = { type: 'object', patternProperties: { '^(a|a)*$': { type: 'string' } } }
      for (const schema of [evil, keyed]) {
        expect(() => ctx.agents.create({ output: { schema } }), JSON.stringify(schema)).to.throw(AgentError, /`pattern` and `patternProperties` are not supported/)
      }
      expect(() => ctx.agents.create({ output: { schema: { type: 'object', properties: { pattern: { type: 'string' } } } } })).not.to.throw()
    })
  })

  it('a final answer with other calls in its step: the others are not run, the transcript stays balanced', async () => {
    let ran = 0
    ctx.plugin(toolPlugin({ name: 'probe', description: 'p', input: z.object({}), execute: () => { ran++; return { content: 'ok' } } }))
    await ctx.lifecycle.flush()
    const model = new ScriptedModel([{ toolCalls: [{ id: 'p', name: 'probe', input: {} }, { id: 'f', name: FINAL_ANSWER_TOOL, input: { n: 5 } }] }])
    ctx.agents.registerModel('m', model)
    const agent = ctx.agents.create({ model: 'm', output: { schema: SCHEMA } })
    const result = await agent.run('count')
    expect(result).to.deep.include({ stopReason: 'completed', value: { n: 5 }, text: '{"n":5}', steps: 1 })
    expect(ran).to.equal(0)
    const answers = agent.transcript.messages.filter((m): m is ToolMessage => m.role === 'tool')
    expect(answers.map((m) => [m.toolCallId, m.content.slice(0, 8)])).to.deep.equal([['p', 'Not run:'], ['f', 'Accepted']])
    expect(isBalanced(agent.transcript.messages)).to.equal(true)
  })

  it('a text answer without the tool is accepted when it is valid JSON, else corrected by a user message', async () => {
    const model = new ScriptedModel([{ text: 'five' }, { text: '{"n": 5}' }])
    ctx.agents.registerModel('m', model)
    const agent = ctx.agents.create({ model: 'm', output: { schema: SCHEMA, maxCorrections: 1 } })
    const result = await agent.run('count')
    expect(result).to.deep.include({ stopReason: 'completed', value: { n: 5 }, steps: 2 })
    expect(model.requests[1].messages.at(-1)!.content).to.include(`Call the ${FINAL_ANSWER_TOOL} tool`)
  })

  it('an agent without an output schema sees no final-answer tool and its result has no value', async () => {
    const model = new ScriptedModel([{ text: '{"n": 5}' }])
    ctx.agents.registerModel('m', model)
    const result = await ctx.agents.create({ model: 'm' }).run('count')
    expect(result).to.not.have.property('value')
    expect(model.requests[0].tools.map((t) => t.name)).to.not.include(FINAL_ANSWER_TOOL)
    expect(model.requests[0]).to.not.have.property('output')
  })
})
