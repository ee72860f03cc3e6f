// @cordis-subagents/telemetry end to end: the exact span tree of delegation trees, recorded by the
// in-memory exporter; the ACP child is the quick start's agent in a real subprocess, which exports
// its own spans (to a file) under the trace context provider-acp passed it; they join by trace id.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type { GenerateRequest, ScriptedResponse } from '@cordis-subagents/agent'
import { ROOT_PROMPT } from '@cordis-subagents/quickstart/demo-model'
import { buildQuickstart } from './helpers.js'
import { until } from './support/async.js'
import { lastUserText, rootSpan, type SpanView, spansOf, startTracedHost, toolResults, tree, type TracedHost, USAGE } from './support/traced-host.js'

const delegate = (id: string, tool: string, prompt: string) => ({ id, name: tool, input: { description: `task ${id}`, prompt } })

/** The parent delegates what `calls` says in its first step, then answers; children answer their prompt. */
function script(calls: ReturnType<typeof delegate>[], child: (prompt: string) => ScriptedResponse | Promise<ScriptedResponse>) {
  return (request: GenerateRequest): ScriptedResponse | Promise<ScriptedResponse> => {
    const prompt = lastUserText(request)
    if (prompt !== 'ROOT') return child(prompt)
    return toolResults(request).length ? { text: 'all done' } : { text: 'delegating', toolCalls: calls }
  }
}

describe('telemetry: span trees of delegations', function () {
  this.timeout(60_000)
  let host: TracedHost | undefined
  let dir: string

  before(() => buildQuickstart())
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'telemetry-')) })
  afterEach(async () => {
    await host?.stop()
    host = undefined
    rmSync(dir, { recursive: true, force: true })
  })

  async function runRoot(h: TracedHost, signal?: AbortSignal) {
    const agent = h.ctx.agents.create({ label: 'main' })
    try {
      return await agent.run('ROOT', { signal })
    } finally {
      await agent.dispose()
    }
  }

  it('a parent with two spawn children and one ACP child: one trace, the child process\' spans included', async () => {
    const file = join(dir, 'acp-spans.jsonl')
    host = await startTracedHost({
      acpTraceFile: file,
      script: script([
        delegate('call-a', 'subagent', 'task A'),
        delegate('call-b', 'subagent', 'task B'),
        delegate('call-c', 'subagent_acp', `${ROOT_PROMPT}.`),
      ], (prompt) => ({ text: `answer to ${prompt}` })),
    })
    const result = await runRoot(host)
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    const spans = spansOf(host.exporter, file)
    const root = rootSpan(spans, 'invoke_agent main')
    expect(tree(spans, root)).to.deep.equal([
      'invoke_agent main (depth=0, stop=completed)',
      '  chat script (step=1, finish=tool-calls)',
      '  execute_tool subagent (call=call-a)',
      '    subagent spawn (stop=completed)',
      '      invoke_agent spawn (depth=1, stop=completed)',
      '        chat script (step=1, finish=stop)',
      '  execute_tool subagent (call=call-b)',
      '    subagent spawn (stop=completed)',
      '      invoke_agent spawn (depth=1, stop=completed)',
      '        chat script (step=1, finish=stop)',
      '  execute_tool subagent_acp (call=call-c)',
      '    subagent acp (stop=completed)',
      '      invoke_agent acp (depth=1, stop=completed, in acp-child)',
      '        chat demo (step=1, finish=tool-calls, in acp-child)',
      '        execute_tool read_file (call=call_0_0, in acp-child)',
      '        chat demo (step=2, finish=stop, in acp-child)',
      '  chat script (step=2, finish=stop)',
    ])
    expect(new Set(spans.map((span) => span.traceId))).to.deep.equal(new Set([root.traceId]))

    // Attributes per the GenAI conventions, and ours.
    const by = (name: string, test: (span: SpanView) => boolean = () => true) => spans.filter((span) => span.name === name && test(span))
    expect(root.attributes).to.deep.include({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'main',
      'gen_ai.request.model': 'script',
      'gen_ai.usage.input_tokens': 2 * USAGE.inputTokens,
      'gen_ai.usage.output_tokens': 2 * USAGE.outputTokens,
      'cordis_subagents.usage.delegated.input_tokens': result.usage.inputTokens - 2 * USAGE.inputTokens,
      'cordis_subagents.work.steps': 2,
      'cordis_subagents.work.tool_calls': 3,
      'cordis_subagents.work.delegations': 3,
    })
    expect(root.attributes['cordis_subagents.usage.delegated.input_tokens']).to.be.greaterThan(2 * USAGE.inputTokens)
    expect(root.attributes['gen_ai.agent.id']).to.be.a('string')
    const [chat] = by('chat script', (span) => span.parentSpanId === root.spanId && span.attributes['cordis_subagents.step'] === 1)
    expect(chat.attributes).to.deep.include({
      'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'script', 'gen_ai.request.model': 'script',
      'gen_ai.usage.input_tokens': 10, 'gen_ai.usage.output_tokens': 5,
    })
    const [tool] = by('execute_tool subagent', (span) => span.attributes['gen_ai.tool.call.id'] === 'call-a')
    expect(tool.attributes).to.deep.include({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'subagent', 'gen_ai.tool.type': 'function' })
    const [delegation] = by('subagent spawn', (span) => span.parentSpanId === tool.spanId)
    expect(delegation.attributes).to.deep.include({
      'cordis_subagents.provider.name': 'spawn', 'cordis_subagents.agent.depth': 1, 'cordis_subagents.subagent.label': 'task call-a',
      'gen_ai.tool.call.id': 'call-a', 'cordis_subagents.usage.input_tokens': 10, 'cordis_subagents.work.steps': 1,
    })
    const runId = delegation.attributes['cordis_subagents.run.id']
    expect(runId).to.match(/^run-/)
    const [child] = by('invoke_agent spawn', (span) => span.parentSpanId === delegation.spanId)
    expect(child.attributes).to.deep.include({ 'cordis_subagents.run.id': runId, 'cordis_subagents.provider.name': 'spawn' })
    expect(child.attributes['cordis_subagents.agent.parent_id']).to.equal(root.attributes['gen_ai.agent.id'])
    const [acpChild] = by('invoke_agent acp')
    expect(acpChild.attributes).to.deep.include({ 'gen_ai.agent.name': 'acp', 'gen_ai.request.model': 'demo' })
    const [readFile] = by('execute_tool read_file')
    expect(readFile.attributes).to.deep.include({ 'gen_ai.tool.name': 'read_file' })
    // Content is off by default: no prompt, output or tool data on any span.
    for (const span of spans) {
      expect(Object.keys(span.attributes).filter((key) => /messages|arguments|call\.result/.test(key)), span.name).to.deep.equal([])
    }
  })

  it('a failed child: its model error marks the chat, the child run, the delegation and the tool call', async () => {
    host = await startTracedHost({
      script: script([delegate('call-f', 'subagent', 'task FAIL')], () => { throw new Error('model exploded') }),
    })
    const result = await runRoot(host)
    expect(result.stopReason).to.equal('completed')
    const spans = spansOf(host.exporter)
    expect(tree(spans, rootSpan(spans, 'invoke_agent main'))).to.deep.equal([
      'invoke_agent main (depth=0, stop=completed)',
      '  chat script (step=1, finish=tool-calls)',
      '  execute_tool subagent (call=call-f, error=tool_error)',
      '    subagent spawn (stop=error, error=error)',
      '      invoke_agent spawn (depth=1, stop=error, error=error)',
      '        chat script (step=1, error=Error)',
      '  chat script (step=2, finish=stop)',
    ])
    const failed = spans.filter((span) => span.status === 2)
    expect(failed.map((span) => span.name).sort()).to.deep.equal(['chat script', 'execute_tool subagent', 'invoke_agent spawn', 'subagent spawn'])
    for (const span of failed) {
      // Content capture is off (the default): a status says what failed by class and code, never the
      // model's or the tool's text.
      expect(span.statusMessage, span.name).to.not.include('model exploded')
    }
    expect(Object.fromEntries(failed.map((span) => [span.name, span.statusMessage]))).to.deep.equal({
      'chat script': 'The model call failed (Error).',
      'invoke_agent spawn': 'The run ended with error.',
      'subagent spawn': 'The child ended with error.',
      'execute_tool subagent': 'The tool call returned an error.',
    })
  })

  it('a cancelled child: the parent\'s abort ends the child run, its delegation and the tool call as aborted', async () => {
    let childCalled!: () => void
    const waiting = new Promise<void>((resolve) => { childCalled = resolve })
    host = await startTracedHost({
      script: script([delegate('call-h', 'subagent', 'task HANG')], () => {
        childCalled()
        return new Promise<ScriptedResponse>(() => {})
      }),
    })
    const controller = new AbortController()
    const running = runRoot(host, controller.signal)
    await waiting
    // Handed over (subagent/start) before the abort: the delegation then ends with the child's outcome.
    await until(() => host!.ctx.subagents.runs().length === 1, 'the child was handed over', 10_000)
    controller.abort(new Error('the user pressed stop'))
    const result = await running
    expect(result.stopReason).to.equal('aborted')
    // The delegation span ends when the service reports the child's end (after the parent's turn).
    await until(() => spansOf(host!.exporter).some((span) => span.name === 'subagent spawn'), 'the delegation span ended', 10_000)
    const spans = spansOf(host.exporter)
    const lines = tree(spans, rootSpan(spans, 'invoke_agent main'))
    expect(lines).to.deep.equal([
      'invoke_agent main (depth=0, stop=aborted, error=aborted)',
      '  chat script (step=1, finish=tool-calls)',
      '  execute_tool subagent (call=call-h, error=tool_error)',
      '    subagent spawn (stop=aborted, error=aborted)',
      '      invoke_agent spawn (depth=1, stop=aborted, error=aborted)',
      '        chat script (step=1, error=aborted)',
    ])
    // Content capture is off: the person's reason text stays out of the span; the stop reason is there.
    expect(rootSpan(spans, 'invoke_agent main').statusMessage).to.equal('The run ended with aborted.')
  })

  it('a budget stop: the child and then the parent stop on the tree\'s step budget, with the breach on the spans', async () => {
    host = await startTracedHost({
      agents: { budget: { maxSteps: 2 } },
      script: script([delegate('call-b', 'subagent', 'task LOOP')], () => ({ text: 'one more look', toolCalls: [{ id: 'again', name: 'subagent', input: { description: 'x', prompt: 'task LOOP' } }] })),
    })
    const result = await runRoot(host)
    expect(result.stopReason).to.equal('budget')
    const spans = spansOf(host.exporter)
    const root = rootSpan(spans, 'invoke_agent main')
    expect(tree(spans, root)).to.deep.equal([
      'invoke_agent main (depth=0, stop=budget, error=budget)',
      '  chat script (step=1, finish=tool-calls)',
      '  execute_tool subagent (call=call-b, error=tool_error)',
      '    subagent spawn (stop=budget, error=budget)',
      '      invoke_agent spawn (depth=1, stop=budget, error=budget)',
      '        chat script (step=1, finish=tool-calls)',
      '        execute_tool subagent (call=again, error=tool_error)',
    ])
    expect(root.attributes).to.deep.include({
      'cordis_subagents.budget.name': 'steps', 'cordis_subagents.budget.limit': 2, 'cordis_subagents.budget.spent': 2,
    })
    const delegation = spans.find((span) => span.name === 'subagent spawn')!
    expect(delegation.attributes).to.deep.include({ 'cordis_subagents.budget.name': 'steps', 'cordis_subagents.budget.limit': 2 })
  })
})
