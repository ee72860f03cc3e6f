/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import { type MetricRecord, ScriptedModel } from '@cordis-subagents/agent'
import { captureLogs } from '../../../test/support/logs.js'
import { makeTool, setup, toolPlugin } from './helpers.js'

// The metric sink: one record per model call and per tool call, on the runtime or on one agent (the
// agent's replaces the runtime's), and a sink that throws never breaks the run.

describe('the metric sink: one record per model call and per tool call', () => {
  let ctx: Context
  let logs: ReturnType<typeof captureLogs>

  beforeEach(async () => {
    logs = captureLogs()
    ;({ ctx } = await setup())
    ctx.plugin(toolPlugin(
      makeTool('echo', { execute: async ({ text }) => ({ content: `echo ${text}` }) }),
      makeTool('fail', { execute: async () => ({ content: 'it broke', isError: true }) }),
    ))
    await ctx.lifecycle.flush()
    ctx.agents.registerModel('m', new ScriptedModel([
      { toolCalls: [{ name: 'echo', input: { text: 'a' } }, { name: 'fail', input: { text: 'b' } }], usage: { inputTokens: 3, outputTokens: 4 } },
      { text: 'done', usage: { inputTokens: 5, outputTokens: 6 } },
    ]))
  })

  afterEach(async () => {
    await ctx.stop()
    logs.restore()
  })

  it('records each call with the agent, its run, kind, name, step, duration, tokens and outcome', async () => {
    const records: MetricRecord[] = []
    ctx.agents.metrics((record) => { records.push(record) })
    const parent = ctx.agents.create({ model: 'm' })
    const agent = ctx.agents.create({ model: 'm', parent, hooks: { beforeTool: ({ call }) => call.name === 'fail' ? { refuse: 'not now' } : undefined } })
    expect((await agent.run('go')).stopReason).to.equal('completed')

    const runId = records[0].runId
    expect(runId).to.match(new RegExp(`^${agent.id}#\\d+$`))
    for (const record of records) {
      expect(record).to.include({ agentId: agent.id, parentId: parent.id, runId })
      expect(record.durationMs).to.be.a('number').and.at.least(0)
    }
    // A step's tool calls run concurrently: their records come in the order they end.
    const byStep = records.map(({ kind, name, step, tokens, outcome }) => ({ kind, name, step, tokens, outcome }))
      .sort((a, b) => a.step - b.step || (a.kind === b.kind ? a.name.localeCompare(b.name) : a.kind === 'model' ? -1 : 1))
    expect(byStep).to.deep.equal([
      { kind: 'model', name: 'm', step: 1, tokens: { inputTokens: 3, outputTokens: 4 }, outcome: 'ok' },
      { kind: 'tool', name: 'echo', step: 1, tokens: undefined, outcome: 'ok' },
      { kind: 'tool', name: 'fail', step: 1, tokens: undefined, outcome: 'refused' },
      { kind: 'model', name: 'm', step: 2, tokens: { inputTokens: 5, outputTokens: 6 }, outcome: 'ok' },
    ])
  })

  it('a tool\'s error result and a model that throws are `error`; a new turn gets a new run id', async () => {
    const records: MetricRecord[] = []
    let calls = 0
    ctx.agents.registerModel('flaky', new ScriptedModel(() => {
      if (calls++ === 1) throw new Error('model down')
      return ScriptedModel.call('fail', { text: 'x' })
    }))
    const agent = ctx.agents.create({ model: 'flaky', metrics: (record) => { records.push(record) } })
    expect((await agent.run('go')).stopReason).to.equal('error')
    expect(records.map(({ kind, outcome }) => `${kind} ${outcome}`)).to.deep.equal(['model ok', 'tool error', 'model error'])
    calls = 1
    await agent.run('again')
    expect(records[3].runId).to.not.equal(records[0].runId)
  })

  it('an agent\'s sink replaces the runtime\'s, null has none; each is independent of the hook set', async () => {
    const runtime: string[] = []
    const own: string[] = []
    ctx.agents.metrics((record) => { runtime.push(record.agentId) })
    ctx.agents.hooks({ afterLLM: () => {} })
    const withOwn = ctx.agents.create({ model: 'm', metrics: (record) => { own.push(record.agentId) } })
    await withOwn.run('go')
    expect(own).to.have.length(4)
    expect(runtime).to.deep.equal([])
    ctx.agents.registerModel('again', new ScriptedModel(() => ScriptedModel.text('hi')))
    await ctx.agents.create({ model: 'again', metrics: null }).run('go')
    // An agent with its own hooks still reports to the runtime's sink: the two settings resolve apart.
    await ctx.agents.create({ model: 'again', hooks: { beforeTool: () => undefined } }).run('go')
    expect(runtime).to.have.length(1)
  })

  it('a turn that parks and resumes keeps one run id; the suspended call is recorded when it returns its question', async () => {
    const records: MetricRecord[] = []
    ctx.plugin(toolPlugin({
      name: 'ask', description: 'asks', input: z.object({ text: z.string() }),
      execute: () => ({ content: '', suspend: { question: { id: 'q1', kind: 'ask', text: 'which?', path: [] }, state: {} } }),
      resume: (answer: string) => ({ content: `told ${answer}` }),
    }))
    await ctx.lifecycle.flush()
    ctx.agents.registerModel('asker', new ScriptedModel([ScriptedModel.call('ask', { text: 'q' }), ScriptedModel.text('thanks')]))
    const agent = ctx.agents.create({ model: 'asker', metrics: (record) => { records.push(record) } })
    expect((await agent.run('go')).stopReason).to.equal('pending')
    expect((await agent.resume('blue')).stopReason).to.equal('completed')
    expect(records.map(({ kind, name, step }) => `${kind} ${name} ${step}`)).to.deep.equal(['model asker 1', 'tool ask 1', 'model asker 2'])
    expect(new Set(records.map((record) => record.runId)).size).to.equal(1)
  })

  it('a sink that throws never breaks the run, and is warned about once', async () => {
    let calls = 0
    const agent = ctx.agents.create({ model: 'm', metrics: () => { calls++; throw new Error('sink down') } })
    const result = await agent.run('go')
    expect(result).to.include({ stopReason: 'completed', text: 'done' })
    expect(calls).to.equal(4)
    const warnings = logs.records.filter((record) => record.content.includes('metric sink threw'))
    expect(warnings).to.have.length(1)
    expect(warnings[0].content).to.include('sink down')
  })

  it('the runtime holds one sink at a time (DUPLICATE_HOOKS) and a malformed one is INVALID_OPTIONS', () => {
    const dispose = ctx.agents.metrics(() => {})
    expect(() => ctx.agents.metrics(() => {})).to.throw(/already has a metric sink/).with.property('code', 'DUPLICATE_HOOKS')
    dispose()
    expect(() => ctx.agents.metrics(() => {})).to.not.throw()
    expect(() => ctx.agents.metrics('log' as never)).to.throw(/metrics\(\) must be a function/).with.property('code', 'INVALID_OPTIONS')
  })
})
