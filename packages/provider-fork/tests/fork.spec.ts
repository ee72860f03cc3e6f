/// <reference types="mocha" />
import { expect } from 'chai'
import * as Fork from '@cordis-subagents/provider-fork'
import * as Spawn from '@cordis-subagents/provider-spawn'
import { SUBAGENT_NOTE } from '@cordis-subagents/provider-spawn'
import type { Agent, Message } from '@cordis-subagents/agent'
import {
  type Harness, countingTool, deferred, delegation, hang, loadTool, probeTool, routed, setup, toolMessages, until,
} from '../../provider-spawn/tests/helpers.js'

const u = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens })

describe('provider-fork: a child seeded with the parent\'s completed turns', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  async function load(model: ReturnType<typeof routed>, options: { tools?: Parameters<typeof setup>[0]['tools']; tool?: Record<string, unknown> } = {}) {
    h = await setup({ models: { main: model }, tools: options.tools })
    const provider = h.ctx.plugin(Fork)
    loadTool(h.ctx, { provider: 'fork', ...options.tool })
    await h.ctx.lifecycle.flush()
    return { h, provider }
  }

  /** Turn 1: probe, then answer. Turn 2: fork "fork task", then relay its answer. */
  const parentRoutes = {
    'first task': ({ step }: { step: number }) => step === 0
      ? { toolCalls: [{ id: 'p1', name: 'probe', input: {} }] }
      : { text: 'first answer' },
    'second task': ({ step, results }: { step: number; results: { content: string }[] }) => step === 0
      ? { text: 'forking now', toolCalls: [delegation('fork task', { id: 'f' })] }
      : { text: `relayed: ${results[0].content}` },
  }

  it('the child sees exactly the completed turns plus the prompt, never the turn in flight', async () => {
    const seen: Agent[] = []
    const model = routed({ ...parentRoutes, 'fork task': () => ({ text: 'forked answer' }) })
    const { h } = await load(model, { tools: [probeTool(seen)] })

    const root = h.ctx.agents.create()
    expect((await root.run('first task')).text).to.equal('first answer')
    const turnOne = root.transcript.messages.slice()
    const result = await root.run('second task')
    expect(result.text).to.equal('relayed: forked answer')

    const childRequests = model.requests.filter((r) => r.messages.at(-1)?.role === 'user' && r.messages.at(-1)?.content === 'fork task')
    expect(childRequests).to.have.length(1)
    const expected: Message[] = [
      { role: 'user', content: 'first task' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'p1', name: 'probe', input: {} }] },
      { role: 'tool', toolCallId: 'p1', name: 'probe', content: `probe: ${root.id} at depth 0` },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: 'fork task' },
    ]
    expect(childRequests[0].messages).to.deep.equal(expected)
    expect(turnOne).to.deep.equal(expected.slice(0, 4))

    // The parent's transcript gained turn 2 only, with one tool message for the delegation.
    expect(root.transcript.messages.slice(4)).to.deep.equal([
      { role: 'user', content: 'second task' },
      { role: 'assistant', content: 'forking now', toolCalls: [{ ...delegation('fork task'), id: 'f' }] },
      { role: 'tool', toolCallId: 'f', name: 'subagent', content: 'forked answer' },
      { role: 'assistant', content: 'relayed: forked answer' },
    ])
    expect(h.errors).to.deep.equal([])
  })

  it('the child keeps its seed through its own steps and never writes into the parent\'s transcript', async () => {
    const seen: Agent[] = []
    const model = routed({
      ...parentRoutes,
      'fork task': ({ step, results }) => step === 0
        ? { toolCalls: [{ id: 'c1', name: 'probe', input: {} }] }
        : { text: `child got ${results[0].content}` },
    })
    const { h } = await load(model, { tools: [probeTool(seen)] })

    const root = h.ctx.agents.create()
    await root.run('first task')
    await root.run('second task')

    const child = seen[1]
    expect(child.parent).to.equal(root)
    const childRequests = model.requests.filter((r) => r.messages.some((m) => m.role === 'user' && m.content === 'fork task'))
    expect(childRequests).to.have.length(2)
    expect(childRequests[1].messages.slice(0, 5)).to.deep.equal(childRequests[0].messages)
    expect(childRequests[1].messages.slice(5)).to.deep.equal([
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'probe', input: {} }] },
      { role: 'tool', toolCallId: 'c1', name: 'probe', content: `probe: ${child.id} at depth 1` },
    ])
    // Nothing of the child's turn reached the parent.
    expect(root.transcript.messages.some((m) => m.role === 'tool' && m.toolCallId === 'c1')).to.equal(false)
    expect(toolMessages(root.transcript.messages).map((m) => m.toolCallId)).to.deep.equal(['p1', 'f'])
  })

  it('with no completed turns the child starts with just the prompt', async () => {
    const model = routed({
      'only task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('fork task')] } : { text: results[0].content },
      'fork task': () => ({ text: 'ok' }),
    })
    const { h } = await load(model)
    await h.ctx.agents.create().run('only task')
    const child = model.requests.find((r) => r.messages.at(-1)?.content === 'fork task')!
    expect(child.messages).to.deep.equal([{ role: 'user', content: 'fork task' }])
  })

  it('the child never returns seeded parent text as its output', async () => {
    // The child says nothing: its output must be empty, not the parent's "first answer".
    const model = routed({ ...parentRoutes, 'fork task': () => ({ text: '' }) })
    const { h } = await load(model, { tools: [probeTool([])] })

    const root = h.ctx.agents.create()
    await root.run('first task')
    const result = await root.run('second task')

    expect(h.ends).to.have.length(1)
    expect(h.ends[0].result).to.include({ stopReason: 'completed', output: '' })
    expect(result.text).to.equal('relayed: (The subagent finished without a final message.)')
    expect(result.text).to.not.include('first answer')

    // Straight through the service too.
    const run = await h.ctx.subagents.delegate('fork', { prompt: 'fork task', parent: root, signal: new AbortController().signal })
    const outcome = await run.result
    await run.dispose()
    expect(outcome.output).to.equal('')
  })

  it('a turn that ended by abort is a completed turn: the child gets it balanced', async () => {
    const toolStarted = deferred()
    const model = routed({
      'aborted task': () => ({ toolCalls: [{ id: 'w', name: 'wait', input: {} }] }),
      'second task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('fork task')] } : { text: results[0].content },
      'fork task': () => ({ text: 'ok' }),
    })
    const wait = {
      ...countingTool('wait', []),
      execute: () => { toolStarted.resolve(); return hang<never>() },
    }
    const { h } = await load(model, { tools: [wait] })

    const root = h.ctx.agents.create()
    const controller = new AbortController()
    const first = root.run('aborted task', { signal: controller.signal })
    await toolStarted.promise
    controller.abort()
    expect((await first).stopReason).to.equal('aborted')
    await root.run('second task')

    const child = model.requests.find((r) => r.messages.at(-1)?.content === 'fork task')!
    expect(child.messages).to.have.length(4)
    expect(child.messages.slice(0, 2)).to.deep.equal([
      { role: 'user', content: 'aborted task' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'w', name: 'wait', input: {} }] },
    ])
    expect(child.messages[2]).to.deep.include({ role: 'tool', toolCallId: 'w', name: 'wait', isError: true })
    expect(child.messages[3]).to.deep.equal({ role: 'user', content: 'fork task' })
  })

  it('two forks in one step run concurrently and both get the same seed', async function () {
    this.timeout(5000)
    const started: string[] = []
    const both = deferred()
    const child = (answer: string) => async ({ prompt }: { prompt: string }) => {
      started.push(prompt)
      if (started.length === 2) both.resolve()
      await both.promise
      return { text: answer }
    }
    const model = routed({
      'first task': () => ({ text: 'first answer' }),
      'second task': ({ step, results }) => step === 0
        ? { toolCalls: [delegation('fork A', { id: 'a' }), delegation('fork B', { id: 'b' })] }
        : { text: results.map((r) => r.content).join('+') },
      'fork A': child('A'),
      'fork B': child('B'),
    })
    const { h } = await load(model)
    const root = h.ctx.agents.create()
    await root.run('first task')
    expect((await root.run('second task')).text).to.equal('A+B')

    const seedOf = (prompt: string) => model.requests.find((r) => r.messages.at(-1)?.content === prompt)!.messages.slice(0, -1)
    const seed = [{ role: 'user', content: 'first task' }, { role: 'assistant', content: 'first answer' }]
    expect(seedOf('fork A')).to.deep.equal(seed)
    expect(seedOf('fork B')).to.deep.equal(seed)
    expect(toolMessages(root.transcript.messages)).to.have.length(2)
  })

  it('persona and toolFilter apply as in spawn: persona + note in the child only; filtered tools hidden and refused', async () => {
    const secretCalls: unknown[] = []
    const model = routed({
      'first task': () => ({ text: 'first answer' }),
      'second task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('fork task')] } : { text: results[0].content },
      'fork task': ({ step, results }) => step === 0 ? { toolCalls: [{ name: 'secret', input: {} }] } : { text: results[0].content },
    })
    const { h } = await load(model, {
      tools: [countingTool('secret', secretCalls as never[]), probeTool([])],
      tool: { persona: 'You are a forked helper.', toolFilter: { deny: ['secret'] }, nested: true },
    })
    const root = h.ctx.agents.create()
    await root.run('first task')
    const result = await root.run('second task')

    const childRequests = model.requests.filter((r) => r.messages.some((m) => m.role === 'user' && m.content === 'fork task'))
    expect(childRequests.map((r) => r.system)).to.deep.equal([`You are a forked helper.\n\n${SUBAGENT_NOTE}`, `You are a forked helper.\n\n${SUBAGENT_NOTE}`])
    expect(childRequests[0].tools.map((t) => t.name).sort()).to.deep.equal(['probe', 'subagent'])
    // The parent's three requests (turn 1, turn 2 twice) keep no persona and every tool.
    const parentRequests = model.requests.filter((r) => !childRequests.includes(r))
    expect(parentRequests).to.have.length(3)
    for (const request of parentRequests) {
      expect(request.system).to.equal(undefined)
      expect(request.tools.map((t) => t.name).sort()).to.deep.equal(['probe', 'secret', 'subagent'])
    }
    expect(result.text).to.match(/^Unknown tool "secret"/)
    expect(secretCalls).to.deep.equal([])
  })

  it('depth: the child is one deeper; a fork over maxDepth gets DEPTH_EXCEEDED', async () => {
    const seen: Agent[] = []
    const model = routed({
      'first task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('fork task')] } : { text: results[0].content },
      'fork task': ({ step, results }) => step === 0
        ? { toolCalls: [{ name: 'probe', input: {} }, delegation('deeper')] }
        : { text: `${results[0].content} / ${results[1].content.split('\n').at(-1)}` },
    })
    const { h } = await load(model, { tools: [probeTool(seen)], tool: { maxDepth: 1, nested: true } })
    const result = await h.ctx.agents.create({ cwd: '/tmp/fork-cwd' }).run('first task')
    expect(seen[0].depth).to.equal(1)
    expect(seen[0].cwd).to.equal('/tmp/fork-cwd')
    expect(result.text).to.match(/at depth 1 \/ DEPTH_EXCEEDED: .*would have depth 2, more than maxDepth 1/)
  })

  it('usage: only the child\'s own calls are rolled up, not the seeded turns', async () => {
    const model = routed({
      'first task': () => ({ text: 'first answer', usage: u(50, 5) }),
      'second task': ({ step, results }) => step === 0
        ? { toolCalls: [delegation('fork task')], usage: u(10, 1) }
        : { text: results[0].content, usage: u(10, 1) },
      'fork task': () => ({ text: 'ok', usage: u(7, 3) }),
    })
    const { h } = await load(model)
    const root = h.ctx.agents.create()
    await root.run('first task')
    const result = await root.run('second task')
    expect(result.usage).to.deep.equal(u(27, 5))
    expect(root.usage.own).to.deep.equal(u(70, 7))
    expect(root.usage.delegated).to.deep.equal(u(7, 3))
    expect(h.ends[0].result.usage).to.deep.equal(u(7, 3))
  })

  it('abort during the fork\'s model call: the parent\'s call returns an error result and the child is disposed', async () => {
    const seen: Agent[] = []
    const modelCalled = deferred<AbortSignal>()
    const model = routed({
      'first task': () => ({ text: 'first answer' }),
      'fork task': ({ step, request }) => {
        if (step === 0) return { toolCalls: [{ name: 'probe', input: {} }] }
        modelCalled.resolve(request.signal)
        return hang()
      },
    })
    const { h } = await load(model, { tools: [probeTool(seen)] })
    const root = h.ctx.agents.create()
    await root.run('first task')
    const controller = new AbortController()
    const call = h.ctx.tools.view().execute(
      { id: 'x', name: 'subagent', input: { description: 'fork it', prompt: 'fork task' } },
      { signal: controller.signal, agent: root, toolCallId: 'x' },
    )
    const signal = await modelCalled.promise
    controller.abort()
    const result = await call
    expect(result.isError).to.equal(true)
    expect(result.content).to.match(/^Subagent cancelled: the delegating call was aborted\./)
    expect(signal.aborted).to.equal(true)
    expect(seen[0].disposed).to.equal(true)
    expect(h.ctx.subagents.runs()).to.deep.equal([])
  })

  it('unloading the provider mid-run does not revoke the run', async () => {
    const release = deferred()
    const called = deferred()
    const model = routed({
      'first task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('fork task')] } : { text: results[0].content },
      'fork task': async () => { called.resolve(); await release.promise; return { text: 'fork answer' } },
    })
    const { h, provider } = await load(model)
    const running = h.ctx.agents.create().run('first task')
    await called.promise
    await until(() => h.starts.length === 1)
    provider.dispose()
    expect(h.ctx.subagents.get('fork')).to.equal(undefined)
    release.resolve()
    expect((await running).text).to.equal('fork answer')
  })
})

describe('provider-fork: configuration', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  it('Config: name defaults to fork; maxSteps and description are optional', () => {
    const defaults = { askParent: false, askParentTool: 'ask_parent', maxParkedMs: 3_600_000 }
    expect(Fork.Config({})).to.deep.equal({ name: 'fork', ...defaults })
    expect(Fork.Config({ name: 'fork2', maxSteps: 2 })).to.deep.equal({ name: 'fork2', maxSteps: 2, ...defaults })
    expect(() => Fork.Config({ name: 'no/slash' })).to.throw()
    expect(() => Fork.Config({ maxSteps: 0 })).to.throw()
  })

  it('registers an inheriting provider with every capability; the tool describes what the child already sees', async () => {
    h = await setup({ models: { main: routed({}) } })
    h.ctx.plugin(Fork)
    const provider = h.ctx.subagents.get('fork')!
    expect(provider).to.include({ name: 'fork', inheritsParentContext: true })
    expect(provider.capabilities).to.deep.equal({ persona: true, toolFilter: true, depthLimit: true })
    loadTool(h.ctx, { provider: 'fork' })
    await h.ctx.lifecycle.flush()
    const spec = h.ctx.tools.list().find((tool) => tool.name === 'subagent')!
    expect(spec.description).to.include('completed turns')
    expect(spec.description).to.not.include('does not see this conversation')
  })

  it('fork, fork2 and spawn side by side: names configurable, maxSteps honoured per provider', async () => {
    const model = routed({
      'first task': () => ({ text: 'first answer' }),
      'second task': ({ step, results }) => step === 0
        ? { toolCalls: [delegation('fork one', { tool: 'fork_a' }), delegation('fork two', { tool: 'fork_b' }), delegation('spawned', { tool: 'spawn_a' })] }
        : { text: results.map((r) => r.content.split('\n')[0]).join(' | ') },
      'fork one': () => ({ toolCalls: [{ name: 'probe', input: {} }] }),
      'fork two': ({ step }) => step < 2 ? { toolCalls: [{ name: 'probe', input: {} }] } : { text: 'two done' },
      spawned: () => ({ text: 'spawn done' }),
    })
    h = await setup({ models: { main: model }, tools: [probeTool([])] })
    h.ctx.plugin(Fork, { maxSteps: 1 })
    h.ctx.plugin(Fork, { name: 'fork2', maxSteps: 3 })
    h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'fork', toolName: 'fork_a' })
    loadTool(h.ctx, { provider: 'fork2', toolName: 'fork_b' })
    loadTool(h.ctx, { provider: 'spawn', toolName: 'spawn_a' })
    await h.ctx.lifecycle.flush()
    expect(h.ctx.subagents.list().map((p) => [p.name, p.inheritsParentContext])).to.deep.equal([['fork', true], ['fork2', true], ['spawn', false]])

    const root = h.ctx.agents.create()
    await root.run('first task')
    const result = await root.run('second task')
    expect(result.text).to.equal('Subagent stopped: it used its one model call of its turn (maxSteps) without a final answer. Answer with what you have, or delegate a narrower task. | two done | spawn done')
    expect(model.requests.filter((r) => r.messages.some((m) => m.role === 'user' && m.content === 'fork one'))).to.have.length(1)
    expect(model.requests.filter((r) => r.messages.some((m) => m.role === 'user' && m.content === 'fork two'))).to.have.length(3)
    // Only the forks got the earlier turn.
    const firstOf = (prompt: string) => model.requests.find((r) => r.messages.some((m) => m.role === 'user' && m.content === prompt))!.messages[0]
    expect(firstOf('fork two')).to.deep.equal({ role: 'user', content: 'first task' })
    expect(firstOf('spawned')).to.deep.equal({ role: 'user', content: 'spawned' })
  })
})
