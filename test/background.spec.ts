// Background delegations end to end: the subagent tool in `mode: background`, the control verbs
// (subagent-tool/control), the parent's inbox, against a real Context and scripted models/providers.
import { setMaxListeners } from 'node:events'
import { expect } from 'chai'
import { z } from 'zod'
import { type AgentEvent, MAX_INBOX_MESSAGE_LENGTH, type RunResult } from '@cordis-subagents/agent'
import { LimitError, MAX_MESSAGE_LENGTH } from '@cordis-subagents/shared'
import { type BackgroundTask, SubagentError } from '@cordis-subagents/subagents-service'
import type { ToolResult } from '@cordis-subagents/tools'
import {
  backgroundHost, type BackgroundHost, events, scriptedParent, start, SteerableProvider, tail,
} from './support/background.js'
import { eventually } from '@cordis-subagents/test-support'
import { deferred, tick, until } from './support/async.js'

const USAGE = { inputTokens: 10, outputTokens: 5 }

describe('background delegations (subagent-tool mode: background + subagent-control)', () => {
  let host: BackgroundHost

  afterEach(async () => {
    await host?.stop()
  })

  const book = (agent: object) => host.ctx.subagents.background.peek(agent as never)!
  // The subagent tool's tasks: their result is the tool result.
  const task = (agent: object, handle: string) => book(agent).get(handle) as BackgroundTask<ToolResult>

  it('starts two, works meanwhile, then collects with wait-any and wait-all (sync format, usage rolled up, no message)', async () => {
    host = await backgroundHost()
    const notes: string[] = []
    host.ctx.tools.register({ name: 'note', description: 'note', input: z.strictObject({ text: z.string() }), execute: ({ text }) => { notes.push(text); return { content: `noted ${text}` } } })
    const { agent, model } = scriptedParent(host.ctx, [
      { toolCalls: [start('alpha'), start('beta')] },
      { toolCalls: [{ name: 'note', input: { text: 'my own work' } }] },
      { toolCalls: [{ name: 'subagent_wait', input: { mode: 'any' } }] },
      { toolCalls: [{ name: 'subagent_wait', input: { handles: ['bg-1', 'bg-2'] } }] },
      { text: 'both done' },
    ])
    const seen: AgentEvent[] = []
    const running = agent.run('go', { onEvent: (event) => seen.push(event) })
    await until(() => model.callCount === 3 && !!task(agent, 'bg-2').waiter, 'the first wait waits')
    expect(notes).to.deep.equal(['my own work'])
    expect(tail(model.requests[1], 2).join('\n')).to.match(/Started background subagent bg-1 \("alpha"\)[\s\S]*subagent_wait/)
    host.provider.runs[1].complete('beta result', { usage: USAGE })
    await until(() => model.callCount === 4 && !!task(agent, 'bg-1').waiter, 'the second wait waits')
    host.provider.runs[0].complete('alpha result', { usage: USAGE })
    const result = await running
    expect(result).to.include({ stopReason: 'completed', text: 'both done' })
    expect(tail(model.requests[3], 1)[0]).to.match(/^tool\(subagent_wait\): \[Background subagent bg-2 "beta" finished\]\n\n> beta result\n\n---\n\nStill running:\n- bg-1 "alpha" \(fake\): running/)
    const all = tail(model.requests[4], 1)[0]
    expect(all).to.include('[Background subagent bg-1 "alpha" finished]\n\n> alpha result')
    expect(all).to.include('bg-2 "beta": its result was returned by an earlier wait or cancel call; it is not repeated here (subagent_result { "handle": "bg-2" } reads it again).')
    expect(all.match(/beta result/g)).to.equal(null)
    expect(result.usage.inputTokens).to.be.greaterThanOrEqual(20)
    expect(agent.usage.delegated).to.deep.equal({ inputTokens: 20, outputTokens: 10 })
    expect(result.work.own.delegations).to.equal(2)
    expect(events(seen, 'message')).to.have.length(0)
    expect(book(agent).list().map((t) => t.delivery)).to.deep.equal([{ via: 'wait' }, { via: 'wait' }])
  })

  it('a wait that times out says what still runs; the result then arrives as a marked message at the next step', async () => {
    host = await backgroundHost()
    const { agent, model } = scriptedParent(host.ctx, [
      { toolCalls: [start('slow one')] },
      { toolCalls: [{ name: 'subagent_wait', input: { handles: ['bg-1'], timeoutSeconds: 1 } }] },
      { text: 'I will answer when it is back' },
      { text: 'now with the result' },
    ])
    const seen: AgentEvent[] = []
    const running = agent.run('go', { onEvent: (event) => seen.push(event) })
    await eventually(() => events(seen, 'waiting').length === 1, 'the turn waits on its background child')
    const timedOut = tail(model.requests[2], 1)[0]
    expect(timedOut).to.match(/^tool\(subagent_wait\): Nothing more ended within 1\.0 s\.\nStill running:\n- bg-1 "slow one" \(fake\): running/)
    host.provider.last.complete('slow result', { usage: USAGE })
    const result = await running
    expect(result).to.include({ stopReason: 'completed', text: 'now with the result', steps: 4 })
    expect(tail(model.requests[3], 1)[0]).to.equal('user: [Background subagent bg-1 "slow one" finished]\n\n> slow result')
    expect(result.usage.inputTokens).to.be.greaterThanOrEqual(10)
    expect(result.work.own.delegations).to.equal(1)
    expect(task(agent, 'bg-1').delivery).to.deep.equal({ via: 'message' })
  })

  it('cancel stops one child and returns its last result (once); the other goes on', async () => {
    host = await backgroundHost()
    host.provider.runDefaults = { settleOnDispose: false, partialOutput: 'half of it' }
    const { agent, model } = scriptedParent(host.ctx, [
      { toolCalls: [start('keep'), start('drop')] },
      { toolCalls: [{ name: 'subagent_cancel', input: { handle: 'bg-2' } }] },
      { toolCalls: [{ name: 'subagent_wait', input: { handles: ['bg-1', 'bg-2'] } }] },
      { text: 'done' },
    ])
    const running = agent.run('go')
    await until(() => model.callCount === 3 && !!task(agent, 'bg-1').waiter, 'the wait waits')
    const cancelled = tail(model.requests[2], 1)[0]
    expect(cancelled).to.match(/^tool\(subagent_cancel\): Cancelled bg-2\.\n\n---\n\n\[Background subagent bg-2 "drop" was cancelled \(you cancelled it with subagent_cancel\)\]/)
    expect(cancelled).to.include('half of it')
    expect(host.provider.runs[1].cancels).to.have.length(1)
    expect(host.provider.runs[0].cancels).to.have.length(0)
    host.provider.runs[0].complete('kept result')
    await running
    const waited = tail(model.requests[3], 1)[0]
    expect(waited).to.include('kept result')
    expect(waited).to.include('bg-2 "drop": its result was returned by an earlier wait or cancel call')
  })

  it('a cancel of a child another wait in the same step is collecting says so; that wait returns the result, once', async () => {
    host = await backgroundHost()
    host.provider.runDefaults = { settleOnDispose: false, partialOutput: 'partial' }
    const { agent, model } = scriptedParent(host.ctx, [
      { toolCalls: [start('one')] },
      { toolCalls: [{ name: 'subagent_wait', input: { handles: ['bg-1'] } }, { name: 'subagent_cancel', input: { handle: 'bg-1' } }] },
      { text: 'done' },
    ])
    await agent.run('go')
    const [waited, cancelled] = tail(model.requests[2], 2)
    expect(cancelled).to.equal('tool(subagent_cancel): Cancel requested for bg-1; another subagent_wait call is already waiting for it and will return its result.')
    expect(waited).to.include('[Background subagent bg-1 "one" was cancelled (you cancelled it with subagent_cancel)]')
    expect(waited).to.include('partial')
  })

  it('send steers a running child; a provider without send, an ended child and a bad handle get readable errors', async () => {
    host = await backgroundHost({ provider: new SteerableProvider() })
    const provider = host.provider as SteerableProvider
    const { agent, model } = scriptedParent(host.ctx, [
      { toolCalls: [start('steer me')] },
      { toolCalls: [{ name: 'subagent_send', input: { handle: 'bg-1', message: 'Also check the tests.' } }] },
      { toolCalls: [{ name: 'subagent_send', input: { handle: 'bg-9', message: 'hello' } }] },
      { toolCalls: [{ name: 'subagent_wait', input: {} }] },
      { toolCalls: [{ name: 'subagent_send', input: { handle: 'bg-1', message: 'too late' } }] },
      { text: 'done' },
    ])
    const running = agent.run('go')
    await until(() => model.callCount === 4 && !!task(agent, 'bg-1').waiter, 'the wait waits')
    expect(provider.sent).to.deep.equal([{ runId: provider.calls[0].runId, message: 'Also check the tests.' }])
    expect(tail(model.requests[2], 1)[0]).to.match(/^tool\(subagent_send\): Sent to bg-1\./)
    expect(tail(model.requests[3], 1)[0]).to.equal('tool(subagent_send): UNKNOWN_HANDLE: No background subagent "bg-9" of this agent. Its handles: bg-1.')
    provider.last.complete('steered result')
    await running
    expect(tail(model.requests[5], 1)[0]).to.match(/^tool\(subagent_send\): bg-1 has already ended, so it cannot take a message/)
    expect(model.requests[5].messages.at(-1)).to.include({ isError: true })

    // The kit's provider without send: STEER_UNSUPPORTED, as a readable error.
    const plain = await backgroundHostPlainSend()
    expect(plain).to.match(/^STEER_UNSUPPORTED: Provider "fake" cannot take follow-up messages/)
  })

  async function backgroundHostPlainSend(): Promise<string> {
    await host.stop()
    host = await backgroundHost()
    const { agent } = scriptedParent(host.ctx, [])
    const view = host.ctx.tools.view()
    const exec = { signal: new AbortController().signal, agent, toolCallId: 'c' }
    await view.execute({ name: 'subagent', input: { description: 'x', prompt: 'y' } }, exec)
    await until(() => task(agent, 'bg-1').state === 'running', 'the run is handed over')
    const sent = await view.execute({ name: 'subagent_send', input: { handle: 'bg-1', message: 'hi' } }, exec)
    expect(sent.isError).to.equal(true)
    host.provider.last.complete('x')
    return sent.content
  }

  it('a child that finishes while the parent is mid-step is delivered at the next step, after that step\'s tool results', async () => {
    host = await backgroundHost()
    const gate = deferred<void>()
    host.ctx.tools.register({ name: 'slow', description: 'slow', input: z.strictObject({}), execute: async () => { await gate.promise; return { content: 'slow done' } } })
    const { agent, model } = scriptedParent(host.ctx, [
      { toolCalls: [start('quick')] },
      { toolCalls: [{ name: 'slow', input: {} }] },
      { text: 'done' },
    ])
    const running = agent.run('go')
    await until(() => model.callCount === 2, 'the parent is in its slow step')
    host.provider.last.complete('quick result', { usage: USAGE })
    await until(() => task(agent, 'bg-1').delivery !== undefined, 'the result is delivered')
    expect(model.callCount).to.equal(2)
    gate.resolve()
    const result = await running
    expect(tail(model.requests[2], 2)).to.deep.equal([
      'tool(slow): slow done',
      'user: [Background subagent bg-1 "quick" finished]\n\n> quick result',
    ])
    expect(result.usage.inputTokens).to.be.greaterThanOrEqual(10)
    expect(result.work.own.delegations).to.equal(1)
  })

  it('onTurnEnd wait (default): a turn that would end with children live waits for them and continues with their results', async () => {
    host = await backgroundHost()
    const { agent } = scriptedParent(host.ctx, [
      { toolCalls: [start('a'), start('b')] },
      { text: 'started both' },
      { text: 'got one' },
      { text: 'got both' },
    ])
    const seen: AgentEvent[] = []
    const running = agent.run('go', { onEvent: (event) => seen.push(event) })
    await until(() => events(seen, 'waiting').length === 1, 'the turn waits')
    expect(agent.inbox.held).to.equal(2)
    host.provider.runs[0].complete('A')
    await until(() => events(seen, 'waiting').length === 2, 'the turn waits again after reading A')
    host.provider.runs[1].complete('B')
    const result = await running
    expect(result).to.include({ stopReason: 'completed', text: 'got both' })
    expect(events(seen, 'message').map((e) => (e as { content: string }).content.split('\n')[0])).to.deep.equal([
      '[Background subagent bg-1 "a" finished]', '[Background subagent bg-2 "b" finished]',
    ])
    expect(agent.inbox.held).to.equal(0)
  })

  it('onTurnEnd end: the turn ends with children live; their results are read at the next turn, after its prompt', async () => {
    host = await backgroundHost({ tool: { onTurnEnd: 'end' } })
    const { agent, model } = scriptedParent(host.ctx, [
      { toolCalls: [start('later')] },
      { text: 'started; ending my turn' },
      { text: 'read the result' },
    ])
    const first = await agent.run('go')
    expect(first).to.include({ stopReason: 'completed', text: 'started; ending my turn' })
    expect(task(agent, 'bg-1').live).to.equal(true)
    host.provider.last.complete('late result', { usage: USAGE })
    await until(() => agent.inbox.size === 1, 'the result waits in the inbox')
    const second: RunResult = await agent.run('next')
    expect(tail(model.requests[2], 2)).to.deep.equal(['user: next', 'user: [Background subagent bg-1 "later" finished]\n\n> late result'])
    expect(second.usage.inputTokens).to.be.greaterThanOrEqual(10)
    expect(second.work.own.delegations).to.equal(1)
  })

  it('a parent sees and controls only its own children', async () => {
    host = await backgroundHost()
    const view = host.ctx.tools.view()
    const a = scriptedParent(host.ctx, []).agent
    const b = scriptedParent(host.ctx, []).agent
    const c = scriptedParent(host.ctx, []).agent
    const exec = (agent: object) => ({ signal: new AbortController().signal, agent: agent as never, toolCallId: 'c' })
    await view.execute({ name: 'subagent', input: { description: 'of a', prompt: 'p' } }, exec(a))
    await view.execute({ name: 'subagent', input: { description: 'of a too', prompt: 'p' } }, exec(a))
    await view.execute({ name: 'subagent', input: { description: 'of b', prompt: 'p' } }, exec(b))
    const cancelled = await view.execute({ name: 'subagent_cancel', input: { handle: 'bg-1' } }, exec(b))
    expect(cancelled.content).to.match(/^Cancelled bg-1\./)
    expect(cancelled.content).to.include('"of b"')
    expect(host.provider.runs.map((run) => run.cancels.length)).to.deep.equal([0, 0, 1])
    const unknown = await view.execute({ name: 'subagent_cancel', input: { handle: 'bg-2' } }, exec(b))
    expect(unknown).to.deep.equal({ isError: true, content: 'UNKNOWN_HANDLE: No background subagent "bg-2" of this agent. Its handles: bg-1.' })
    const status = await view.execute({ name: 'subagent_status', input: {} }, exec(b))
    expect(status.content).to.not.include('of a')
    const none = await view.execute({ name: 'subagent_status', input: {} }, exec(c))
    expect(none).to.deep.include({ isError: true })
    expect(none.content).to.match(/You have no background subagents/)
    const statusA = await view.execute({ name: 'subagent_status', input: {} }, exec(a))
    expect(statusA.content.split('\n')).to.have.length(2)
    expect(statusA.content).to.match(/bg-1 "of a" \(fake\): running/)
    host.provider.runs[0].complete('x')
    host.provider.runs[1].complete('y')
  })

  it('a provider reload leaves live background runs running; a tool unload cancels them and delivers why', async () => {
    host = await backgroundHost({ tool: { onTurnEnd: 'end' } })
    const view = host.ctx.tools.view()
    const { agent } = scriptedParent(host.ctx, [])
    const exec = { signal: new AbortController().signal, agent, toolCallId: 'c' }
    await view.execute({ name: 'subagent', input: { description: 'survives', prompt: 'p' } }, exec)
    await until(() => task(agent, 'bg-1').state === 'running', 'running')
    host.providerFork.update({ name: 'fake', description: 'reloaded' })
    await host.ctx.lifecycle.flush()
    expect(task(agent, 'bg-1').live).to.equal(true)
    host.provider.last.complete('after the reload')
    await until(() => agent.inbox.size === 1, 'delivered')
    expect(agent.inbox.drain()[0]).to.equal('[Background subagent bg-1 "survives" finished]\n\n> after the reload')

    await view.execute({ name: 'subagent', input: { description: 'cut short', prompt: 'p' } }, exec)
    await until(() => task(agent, 'bg-2').state === 'running', 'running')
    host.toolFork.dispose()
    await until(() => agent.inbox.size === 1, 'delivered')
    const message = agent.inbox.drain()[0]
    expect(message).to.match(/^\[Background subagent bg-2 "cut short" ended with an error\]\n\n> Subagent cancelled: the subagent tool was unloaded\./)
    expect(host.provider.last.cancels).to.have.length(1)
  })

  it('aborting the parent\'s turn cancels its live background children; their results wait for the next turn', async () => {
    host = await backgroundHost()
    const { agent, model } = scriptedParent(host.ctx, [{ toolCalls: [start('one'), start('two')] }, { text: 'waiting' }, { text: 'next turn' }])
    const seen: AgentEvent[] = []
    const running = agent.run('go', { onEvent: (event) => seen.push(event) })
    await until(() => events(seen, 'waiting').length === 1, 'waiting')
    agent.abort(new Error('the person pressed stop'))
    expect((await running).stopReason).to.equal('aborted')
    await until(() => agent.inbox.size === 2 && agent.inbox.held === 0, 'both results delivered, holds released')
    expect(host.provider.runs.map((run) => run.cancels.length)).to.deep.equal([1, 1])
    await agent.run('again')
    const next = tail(model.requests[2], 3)
    expect(next[0]).to.equal('user: again')
    expect(next[1]).to.match(/^user: \[Background subagent bg-1 "one" was cancelled \(the turn that started it was aborted\)\]\n\n> Subagent cancelled: the delegating call was aborted\./)
  })

  it('disposing the parent cancels its children and reports their results lost with a reason; ctx.stop ends every one', async () => {
    host = await backgroundHost({ tool: { onTurnEnd: 'end' } })
    const view = host.ctx.tools.view()
    const parent = scriptedParent(host.ctx, []).agent
    const other = scriptedParent(host.ctx, []).agent
    const exec = (agent: object) => ({ signal: new AbortController().signal, agent: agent as never, toolCallId: 'c' })
    await view.execute({ name: 'subagent', input: { description: 'orphan', prompt: 'p' } }, exec(parent))
    await view.execute({ name: 'subagent', input: { description: 'stopped', prompt: 'p' } }, exec(other))
    await until(() => host.provider.runs.length === 2, 'both started')
    await parent.dispose()
    await until(() => task(parent, 'bg-1').delivery !== undefined, 'settled')
    expect(task(parent, 'bg-1').delivery).to.deep.equal({ via: 'lost', reason: `the parent agent ${parent.id} was disposed before the result could be delivered` })
    expect(host.provider.runs[0].cancels).to.have.length(1)
    expect(host.logs.filter((r) => r.name === 'subagents' && r.type === 'warn' && r.content.includes(`background result bg-1 of ${parent.id} lost: the parent agent`))).to.have.length(1)
    const live = task(other, 'bg-1')
    const registry = host.ctx.subagents.background
    await host.stop()
    await tick()
    expect(live.live).to.equal(false)
    expect(host.provider.runs[1].cancels).to.have.length(1)
    expect(registry.live.size).to.equal(0)
    expect(live.delivery?.via).to.equal('message')
  })

  it('a result posted to the inbox but never read (the parent was disposed first) is reported lost, not delivered', async () => {
    host = await backgroundHost({ tool: { onTurnEnd: 'end' } })
    const parent = scriptedParent(host.ctx, []).agent
    const exec = { signal: new AbortController().signal, agent: parent, toolCallId: 'c' }
    await host.ctx.tools.view().execute({ name: 'subagent', input: { description: 'unread', prompt: 'p' } }, exec)
    await until(() => host.provider.runs.length === 1, 'started')
    host.provider.runs[0].outcome.resolve({ stopReason: 'completed', output: 'the answer nobody read' })
    await until(() => parent.inbox.size === 1, 'posted')
    expect(task(parent, 'bg-1').delivery).to.deep.equal({ via: 'message' })
    await parent.dispose()
    const reason = `its message was posted to ${parent.id}, but the agent was disposed before reading it`
    expect(task(parent, 'bg-1').delivery).to.deep.equal({ via: 'lost', reason, unread: true })
    expect(host.logs.filter((r) => r.name === 'subagents' && r.type === 'warn' && r.content.includes(`background result bg-1 of ${parent.id} lost: ${reason}`)))
      .to.have.length(1)
  })

  it('a start for an already disposed parent is refused ABORTED and leaves nothing behind', async () => {
    host = await backgroundHost()
    const parent = scriptedParent(host.ctx, []).agent
    await parent.dispose()
    const registry = host.ctx.subagents.background
    // The book records a task before the caller starts its run: a refusal means no task, so no run follows.
    expect(() => registry.start({
      parent, label: 'late', provider: 'fake', onTurnEnd: 'wait', turnSignal: new AbortController().signal,
    })).to.throw(SubagentError).with.property('code', 'ABORTED')
    await tick()
    expect(registry.live.size).to.equal(0)
    expect(registry.peek(parent)?.list() ?? []).to.deep.equal([])
    expect(host.provider.runs).to.have.length(0)
  })

  it('background children count against the service\'s limits (a per-parent slot queues a start) and the per-parent live cap', async () => {
    // 19 starts from one agent outside a run: the tree cap (maxChildren, 16 by default) is raised so
    // that only the per-parent live cap can refuse the last one.
    host = await backgroundHost({ subagents: { maxConcurrentPerParent: 1, maxChildren: 64 } })
    const view = host.ctx.tools.view()
    const { agent } = scriptedParent(host.ctx, [])
    const exec = { signal: new AbortController().signal, agent, toolCallId: 'c' }
    setMaxListeners(0, exec.signal)
    await view.execute({ name: 'subagent', input: { description: 'first', prompt: 'p' } }, exec)
    await view.execute({ name: 'subagent', input: { description: 'queued', prompt: 'p' } }, exec)
    await until(() => task(agent, 'bg-1').state === 'running', 'first runs')
    await tick()
    expect(host.provider.runs).to.have.length(1)
    host.provider.runs[0].update('step')
    host.provider.runs[0].update('text', 'Reading the README\nsecond line')
    host.provider.runs[0].request.onUpdate!({ kind: 'tool-call', tool: 'read_file', step: 2 })
    const first = await view.execute({ name: 'subagent_status', input: { handles: ['bg-1'] } }, exec)
    expect(first.content).to.match(/^- bg-1 "first" \(fake\): running, \d+\.\d s, 2 steps; last: "calls read_file"$/)
    host.provider.runs[0].update('text', 'x'.repeat(500))
    expect(book(agent).get('bg-1').lastProgress).to.have.length(200)
    const status = await view.execute({ name: 'subagent_status', input: { handles: ['bg-2'] } }, exec)
    expect(status.content).to.match(/bg-2 "queued" \(fake\): starting \(waiting for a slot or its provider\)/)
    host.provider.runs[0].complete('1')
    await until(() => host.provider.runs.length === 2, 'the queued one starts')
    host.provider.runs[1].complete('2')
    await until(() => agent.inbox.held === 0, 'all delivered')

    const limit = host.ctx.subagents.background.limits.maxLive
    for (let i = 0; i < limit; i++) await view.execute({ name: 'subagent', input: { description: `n${i}`, prompt: 'p' } }, exec)
    const refused = await view.execute({ name: 'subagent', input: { description: 'one too many', prompt: 'p' } }, exec)
    expect(refused.isError).to.equal(true)
    expect(refused.content).to.match(/BACKGROUND_LIMIT: This agent already has 16 background subagents running/)
    expect(() => book(agent).start({} as never)).to.throw(SubagentError)
    book(agent).cancelAll('test cleanup')
    await until(() => agent.inbox.held === 0, 'all cancelled and delivered')
  })

  it('a wait on an unknown handle lists the parent\'s handles; nothing to wait for is said plainly', async () => {
    host = await backgroundHost()
    const view = host.ctx.tools.view()
    const { agent } = scriptedParent(host.ctx, [])
    const exec = { signal: new AbortController().signal, agent, toolCallId: 'c' }
    const before = await view.execute({ name: 'subagent_wait', input: {} }, exec)
    expect(before).to.deep.include({ isError: true })
    await view.execute({ name: 'subagent', input: { description: 'only', prompt: 'p' } }, exec)
    const unknown = await view.execute({ name: 'subagent_wait', input: { handles: ['bg-7'] } }, exec)
    expect(unknown.content).to.equal('UNKNOWN_HANDLE: No background subagent "bg-7" of this agent. Its handles: bg-1.')
    const bad = await view.execute({ name: 'subagent_wait', input: { handles: ['job-1'] } }, exec)
    expect(bad.isError).to.equal(true)
    expect(bad.content).to.match(/A handle looks like "bg-1"/)
    const tooLong = await view.execute({ name: 'subagent_wait', input: { timeoutSeconds: 100_000 } }, exec)
    expect(tooLong.isError).to.equal(true)
    host.provider.last.complete('x')
    await until(() => task(agent, 'bg-1').delivery !== undefined, 'delivered')
    const after = await view.execute({ name: 'subagent_wait', input: {} }, exec)
    expect(after.content).to.match(/You have no background subagents running/)
    const again = await view.execute({ name: 'subagent_wait', input: { handles: ['bg-1'] } }, exec)
    expect(again.content).to.equal('bg-1 "only": its result was delivered to you as a message marked [Background subagent …]; it is not repeated here '
      + '(subagent_result { "handle": "bg-1" } reads it again).')
  })

  it('the start says what the model can do next, and the tool description says it runs in the background', async () => {
    host = await backgroundHost()
    const spec = host.ctx.tools.view().list().find((tool) => tool.name === 'subagent')!
    expect(spec.description).to.include('It runs in the background')
    expect(Object.keys((spec.parameters as { properties: object }).properties)).to.deep.equal(['description', 'prompt'])
    expect(host.ctx.tools.view().list().map((tool) => tool.name)).to.include.members(['subagent_wait', 'subagent_status', 'subagent_cancel', 'subagent_send'])
    const { agent } = scriptedParent(host.ctx, [])
    const started = await host.ctx.tools.view().execute({ name: 'subagent', input: { description: 'x', prompt: 'y' } }, { signal: new AbortController().signal, agent, toolCallId: 'c' })
    expect(started.content).to.include('subagent_wait { "handles": ["bg-1"] }')
    expect(started.metadata).to.deep.equal({ background: true, handle: 'bg-1', provider: 'fake' })
    host.controlFork.dispose()
    await host.ctx.lifecycle.flush()
    const bare = await host.ctx.tools.view().execute({ name: 'subagent', input: { description: 'x', prompt: 'y' } }, { signal: new AbortController().signal, agent, toolCallId: 'c' })
    expect(bare.content).to.not.include('subagent_wait')
    expect(bare.content).to.include('as a message marked [Background subagent bg-2')
    host.provider.runs.forEach((run) => run.complete('z'))
  })

  it('children: by default a child has neither the background tool nor the verbs; the start names the verbs only when the caller can call them', async () => {
    host = await backgroundHost()
    const { agent: parent } = scriptedParent(host.ctx, [])
    const plainChild = host.ctx.agents.create({ parent })
    expect(plainChild.tools.names()).to.deep.equal([])
    await host.stop()

    // A nested background tool, verbs for depth 0 only: the child's start does not send it to tools it lacks.
    host = await backgroundHost({ tool: { nested: true } })
    const { agent: root } = scriptedParent(host.ctx, [])
    const child = host.ctx.agents.create({ parent: root })
    expect(child.tools.names()).to.deep.equal(['subagent'])
    const exec = { signal: new AbortController().signal, agent: child, toolCallId: 'c' }
    const input = { description: 'grandchild', prompt: 'p' }
    const unnamed = await child.tools.execute({ name: 'subagent', input }, exec)
    expect(unnamed.content).to.match(/^Started background subagent bg-1/)
    expect(unnamed.content).to.not.include('subagent_wait')
    expect(unnamed.content).to.include('as a message marked [Background subagent bg-1')
    // The root still sees the verbs, and its own start names them.
    const rootStart = await root.tools.execute({ name: 'subagent', input }, { ...exec, agent: root })
    expect(rootStart.content).to.include('subagent_wait { "handles": ["bg-1"] }')
    host.controlFork.update({ nested: true })
    await host.ctx.lifecycle.flush()
    const named = await child.tools.execute({ name: 'subagent', input }, exec)
    expect(named.content).to.include('subagent_wait { "handles": ["bg-2"] }')
    expect(await child.tools.execute({ name: 'subagent_status', input: {} }, exec)).to.not.have.property('isError')
    host.provider.runs.forEach((run) => run.complete('z'))
  })

  it('a wait-all collecting two results at once rolls up both (usage summed, two delegations in the total)', async () => {
    host = await backgroundHost()
    const { agent, model } = scriptedParent(host.ctx, [
      { toolCalls: [start('x'), start('y')] },
      { toolCalls: [{ name: 'subagent_wait', input: {} }] },
      { text: 'done' },
    ])
    const running = agent.run('go')
    await until(() => model.callCount === 2 && !!task(agent, 'bg-2').waiter, 'the wait waits')
    host.provider.runs[0].complete('X', { usage: USAGE, work: { steps: 3, toolCalls: 1, delegations: 0 } })
    host.provider.runs[1].complete('Y', { usage: USAGE, work: { steps: 2, toolCalls: 0, delegations: 1 } })
    const result = await running
    const collected = tail(model.requests[2], 1)[0]
    expect(collected).to.include('[Background subagent bg-1 "x" finished]\n\n> X')
    expect(collected).to.include('[Background subagent bg-2 "y" finished]\n\n> Y')
    expect(agent.usage.delegated).to.deep.equal({ inputTokens: 20, outputTokens: 10 })
    expect(result.work.delegated.steps).to.equal(5)
    expect(result.work.own.delegations + result.work.delegated.delegations).to.equal(3)
  })

  it('a wait interrupted by an abort of the turn hands what it gathered to the inbox: every result still arrives once', async () => {
    host = await backgroundHost()
    const { agent, model } = scriptedParent(host.ctx, [
      { toolCalls: [start('first'), start('second')] },
      { toolCalls: [{ name: 'subagent_wait', input: { mode: 'all' } }] },
      { text: 'next turn' },
    ])
    const running = agent.run('go')
    await until(() => model.callCount === 2 && !!task(agent, 'bg-1').waiter, 'the wait waits')
    host.provider.runs[0].complete('first result')
    await tick()
    expect(task(agent, 'bg-1').delivery).to.equal(undefined)
    agent.abort(new Error('stop'))
    expect((await running).stopReason).to.equal('aborted')
    await until(() => book(agent).list().every((t) => t.delivery), 'both delivered')
    expect(book(agent).list().map((t) => t.delivery)).to.deep.equal([{ via: 'message' }, { via: 'message' }])
    const messages = agent.inbox.drain()
    expect(messages).to.have.length(2)
    expect(messages[0]).to.equal('[Background subagent bg-1 "first" finished]\n\n> first result')
    expect(messages[1]).to.match(/^\[Background subagent bg-2 "second" was cancelled \(the turn that started it was aborted\)\]/)
  })

  it('a result longer than one inbox message is cut with a note, and the limit matches the agent\'s', async () => {
    expect(MAX_MESSAGE_LENGTH).to.equal(MAX_INBOX_MESSAGE_LENGTH)
    // The registry's result cap (100 KiB by default) would cut first: raise it so the inbox's cap is the one that applies.
    host = await backgroundHost({ tool: { onTurnEnd: 'end', maxOutputBytes: 4 * 1024 * 1024 }, tools: { maxResultBytes: 8 * 1024 * 1024 } })
    const { agent } = scriptedParent(host.ctx, [])
    await host.ctx.tools.view().execute({ name: 'subagent', input: { description: 'huge', prompt: 'p' } }, { signal: new AbortController().signal, agent, toolCallId: 'c' })
    await until(() => host.provider.runs.length === 1, 'started')
    host.provider.last.complete('y'.repeat(2 * MAX_MESSAGE_LENGTH))
    await until(() => agent.inbox.size === 1, 'delivered')
    const [message] = agent.inbox.drain()
    expect(message.length).to.be.at.most(MAX_MESSAGE_LENGTH)
    // Quoted (one long line), then cut: our note on the cut is the only other line at column 0.
    expect(message).to.match(/^\[Background subagent bg-1 "huge" finished\]\n\n> y+\n\n\[Text cut to \d+ characters to fit one message\.\]$/)
    expect(task(agent, 'bg-1').delivery).to.deep.equal({ via: 'message' })
  })

  it('a send to a child still queued for a slot waits for its hand-over, then reaches it', async () => {
    host = await backgroundHost({ provider: new SteerableProvider(), subagents: { maxConcurrentPerParent: 1 } })
    const provider = host.provider as SteerableProvider
    const view = host.ctx.tools.view()
    const { agent } = scriptedParent(host.ctx, [])
    const exec = { signal: new AbortController().signal, agent, toolCallId: 'c' }
    await view.execute({ name: 'subagent', input: { description: 'first', prompt: 'p' } }, exec)
    await view.execute({ name: 'subagent', input: { description: 'second', prompt: 'p' } }, exec)
    await until(() => provider.runs.length === 1, 'the first runs')
    const sending = view.execute({ name: 'subagent_send', input: { handle: 'bg-2', message: 'for the queued one' } }, exec)
    await tick()
    expect(provider.sent).to.deep.equal([])
    provider.runs[0].complete('1')
    const sent = await sending
    expect(sent.content).to.match(/^Sent to bg-2\./)
    expect(provider.sent).to.deep.equal([{ runId: provider.calls[1].runId, message: 'for the queued one' }])
    provider.runs[1].complete('2')
    await until(() => agent.inbox.held === 0, 'both delivered')
  })

  it('a limit that stops the starting turn passes down: the background child ends `timeout`, not as a person\'s cancel', async () => {
    host = await backgroundHost()
    const { agent } = scriptedParent(host.ctx, [{ toolCalls: [start('bounded')] }, { text: 'waiting' }, { text: 'next' }])
    const seen: AgentEvent[] = []
    const running = agent.run('go', { onEvent: (event) => seen.push(event) })
    await until(() => events(seen, 'waiting').length === 1, 'waiting')
    agent.abort(new LimitError('TIMEOUT', 'the turn ran out of time'))
    expect((await running).stopReason).to.equal('timeout')
    await until(() => task(agent, 'bg-1').delivery !== undefined, 'delivered')
    const message = agent.inbox.drain()[0]
    expect(message).to.match(/^\[Background subagent bg-1 "bounded" was cancelled \(the turn that started it was stopped by a timeout limit\)\]\n\n> Subagent was stopped by a timeout\./)
    expect(task(agent, 'bg-1').result!.metadata).to.include({ stopReason: 'timeout' })
  })

  it('the tool\'s timeout applies to each background child; the tree\'s maxChildren counts background starts', async () => {
    host = await backgroundHost({ tool: { timeout: 50 }, subagents: { maxChildren: 1 } })
    const { agent, model } = scriptedParent(host.ctx, [
      { toolCalls: [start('slow'), start('one too many')] },
      { toolCalls: [{ name: 'subagent_wait', input: { handles: ['bg-1', 'bg-2'] } }] },
      { text: 'done' },
    ])
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('completed')
    const collected = tail(model.requests[2], 1)[0]
    expect(collected).to.include('[Background subagent bg-1 "slow" ended with an error]\n\n> Subagent timed out after 50 ms and was cancelled.')
    // Refused at once, so it ends before the wait: as a message read at step 2 (the wait then says so), exactly once.
    const everything = model.requests[2].messages.map((m) => m.content).join('\n')
    const refusal = '[Background subagent bg-2 "one too many" ended with an error]\n\n> Could not start the subagent.\n>\n> BUDGET_EXCEEDED:'
    expect(everything.split(refusal).length - 1).to.equal(1)
    expect(['message', 'wait']).to.include(task(agent, 'bg-2').delivery!.via)
    expect(model.requests[2].messages.at(-1)).to.include({ isError: true })
    expect(host.provider.runs).to.have.length(1)
    expect(task(agent, 'bg-1').result!.metadata).to.include({ stopReason: 'timeout' })
  })

  it('a caller that is not an agent with an inbox is refused with a code, nothing started', async () => {
    host = await backgroundHost()
    const refused = await host.ctx.tools.view().execute({ name: 'subagent', input: { description: 'x', prompt: 'y' } },
      { signal: new AbortController().signal, agent: { id: 'stand-in', depth: 0 }, toolCallId: 'c' })
    expect(refused.isError).to.equal(true)
    expect(refused.content).to.match(/^Could not start the subagent in the background\.\n\nINVALID_REQUEST: A background delegation needs a parent agent with an inbox/)
    expect(host.provider.calls).to.have.length(0)
  })
})
