/// <reference types="mocha" />
import { expect } from 'chai'
import {
  call, caller, deferred, type Harness, INPUT, isSettled, loadProvider, loadTool, NONE, parentAgent,
  ProviderControl, setup, tick, until,
} from './helpers.js'

describe('subagent-tool: lifecycle', () => {
  let h: Harness
  let changes: string[]

  beforeEach(async () => {
    h = await setup()
    changes = []
    h.ctx.on('tools/changed', (name, change) => { changes.push(`${change}:${name}`) })
  })

  afterEach(async () => {
    await h.stop()
  })

  it('tool first, then provider: waits (logged once at info), then mounts when the provider appears', async () => {
    const spawn = new ProviderControl()
    await loadTool(h.ctx, { provider: 'spawn' })
    expect(h.ctx.tools.has('subagent')).to.equal(false)
    const waiting = h.toolLogs('info')
    expect(waiting).to.have.length(1)
    expect(waiting[0].content).to.contain('waits for provider "spawn"')

    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    expect(h.ctx.tools.has('subagent')).to.equal(true)
    expect(changes).to.deep.equal(['added:subagent'])
    expect(h.toolLogs('info')).to.have.length(1)

    spawn.onRun = (run) => run.complete('ok')
    const result = await call(h.ctx, INPUT)
    expect(result).to.include({ content: 'ok' })
    expect(result.isError).to.equal(undefined)
    expect(h.errors).to.deep.equal([])
  })

  it('ctx.subagents.ready(name): an app awaiting a provider that loads later finds the tool mounted when it resumes', async () => {
    const spawn = new ProviderControl()
    await loadTool(h.ctx, { provider: 'spawn' })
    let mountedAtResume: boolean | undefined
    const waiting = h.ctx.subagents.ready('spawn').then((provider) => {
      mountedAtResume = h.ctx.tools.has('subagent')
      return provider
    })
    await tick()
    expect(await isSettled(waiting)).to.equal(false)
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    expect((await waiting).name).to.equal('spawn')
    expect(mountedAtResume).to.equal(true)
    // Already present: at once.
    expect((await h.ctx.subagents.ready('spawn')).name).to.equal('spawn')
  })

  it('ctx.subagents.ready(name) gives up: NO_PROVIDER after its timeout, ABORTED on a signal or a stop, INVALID_REQUEST for a bad timeout', async () => {
    const late = await h.ctx.subagents.ready('never', { timeout: 20 }).then(() => undefined, (error: unknown) => error)
    expect(late).to.include({ code: 'NO_PROVIDER' })
    expect((late as Error).message).to.contain('"never"').and.contain('20 ms').and.contain('plugin')
    const controller = new AbortController()
    const aborted = h.ctx.subagents.ready('never', { signal: controller.signal }).then(() => undefined, (error: unknown) => error)
    controller.abort()
    expect(await aborted).to.include({ code: 'ABORTED' })
    for (const timeout of [-1, 1.5, Number.POSITIVE_INFINITY]) {
      expect(await h.ctx.subagents.ready('x', { timeout }).then(() => undefined, (error: unknown) => error)).to.include({ code: 'INVALID_REQUEST' })
    }
    const stopped = h.ctx.subagents.ready('never', { timeout: 0 }).then(() => undefined, (error: unknown) => error)
    await h.stop()
    expect(await stopped).to.include({ code: 'ABORTED' })
  })

  it('the waiting log names the registered providers, so a typo is visible', async () => {
    await loadProvider(h.ctx, new ProviderControl(), { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spwan' })
    expect(h.ctx.tools.has('subagent')).to.equal(false)
    const [record] = h.toolLogs('info')
    expect(record.content).to.contain('"spwan"').and.to.contain('spawn')
  })

  it('provider first, then tool: mounts at once and logs no waiting line', async () => {
    const spawn = new ProviderControl()
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spawn' })
    expect(h.ctx.tools.has('subagent')).to.equal(true)
    expect(changes).to.deep.equal(['added:subagent'])
    expect(h.toolLogs('info')).to.deep.equal([])
    expect(h.errors).to.deep.equal([])
  })

  it('two loads (`subagent` → spawn-like, `subagent_acp` → acp-like) coexist and each reaches its own provider', async () => {
    const spawn = new ProviderControl()
    const acp = new ProviderControl()
    // Mixed order on purpose: one tool before its provider, one after.
    await loadTool(h.ctx, { provider: 'spawn' })
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    await loadProvider(h.ctx, acp, { name: 'acp', capabilities: NONE, description: 'an external agent over ACP' })
    await loadTool(h.ctx, { provider: 'acp', toolName: 'subagent_acp' })
    expect(h.ctx.tools.list().map((spec) => spec.name).sort()).to.deep.equal(['subagent', 'subagent_acp'])
    expect(h.ctx.tools.list().find((spec) => spec.name === 'subagent_acp')!.description).to.contain('an external agent over ACP')

    spawn.onRun = (run) => run.complete('from spawn')
    acp.onRun = (run) => run.complete('from acp')
    const [a, b] = await Promise.all([
      call(h.ctx, INPUT),
      call(h.ctx, INPUT, { name: 'subagent_acp' }),
    ])
    expect(a.content).to.equal('from spawn')
    expect(b.content).to.equal('from acp')
    expect(a.metadata).to.include({ provider: 'spawn' })
    expect(b.metadata).to.include({ provider: 'acp' })
    expect(spawn.starts).to.have.length(1)
    expect(acp.starts).to.have.length(1)
    expect(h.errors).to.deep.equal([])
  })

  it('provider removed → tool unregistered (logged); provider back → tool back', async () => {
    const spawn = new ProviderControl()
    await loadTool(h.ctx, { provider: 'spawn' })
    const provider = await loadProvider(h.ctx, spawn, { name: 'spawn' })
    provider.dispose()
    await tick()
    expect(h.ctx.tools.has('subagent')).to.equal(false)
    expect(h.toolLogs('debug').map((r) => r.content).join('\n')).to.contain('provider "spawn" was removed')
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    expect(h.ctx.tools.has('subagent')).to.equal(true)
    expect(changes).to.deep.equal(['added:subagent', 'removed:subagent', 'added:subagent'])
  })

  it('provider reload while idle (fork.update with changed config): tool unregistered, then re-registered', async () => {
    const spawn = new ProviderControl()
    const provider = await loadProvider(h.ctx, spawn, { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spawn' })
    changes.length = 0
    provider.update({ name: 'spawn', description: 'reloaded' })
    await h.ctx.lifecycle.flush()
    expect(changes).to.deep.equal(['removed:subagent', 'added:subagent'])
    expect(h.ctx.tools.list()[0].description).to.contain('reloaded')
    spawn.onRun = (run) => run.complete('after reload')
    expect((await call(h.ctx, INPUT)).content).to.equal('after reload')
    expect(h.errors).to.deep.equal([])
  })

  it('provider reload while a run is in flight: the run finishes and the call returns normally', async () => {
    const spawn = new ProviderControl()
    const provider = await loadProvider(h.ctx, spawn, { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spawn' })
    const pending = call(h.ctx, INPUT)
    await until(() => h.ctx.subagents.runs().length === 1, 'the run was handed over')

    provider.update({ name: 'spawn', description: 'reloaded' })
    await h.ctx.lifecycle.flush()
    expect(h.ctx.tools.has('subagent')).to.equal(true)
    expect(changes).to.deep.equal(['added:subagent', 'removed:subagent', 'added:subagent'])
    expect(await isSettled(pending)).to.equal(false)

    spawn.last.complete('survived the reload', { usage: { inputTokens: 3, outputTokens: 4 } })
    const result = await pending
    expect(result.isError).to.equal(undefined)
    expect(result.content).to.equal('survived the reload')
    expect(result.usage).to.deep.equal({ inputTokens: 3, outputTokens: 4 })
    expect(spawn.last.cancels).to.deep.equal([])
    expect(spawn.last.disposeCalls).to.equal(1)
    expect(h.errors).to.deep.equal([])
  })

  it('provider removed while a run is in flight: the run still returns its result', async () => {
    const spawn = new ProviderControl()
    const provider = await loadProvider(h.ctx, spawn, { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spawn' })
    const pending = call(h.ctx, INPUT)
    await until(() => h.ctx.subagents.runs().length === 1, 'the run was handed over')
    provider.dispose()
    await tick()
    expect(h.ctx.tools.has('subagent')).to.equal(false)
    spawn.last.complete('still here')
    const result = await pending
    expect(result.content).to.equal('still here')
    expect(spawn.last.disposeCalls).to.equal(1)
  })

  it('tool unload during a run: the call gets the unload headline; the run is cancelled and disposed exactly once', async () => {
    const spawn = new ProviderControl()
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    const tool = await loadTool(h.ctx, { provider: 'spawn' })
    spawn.onRun = (run) => { run.partialOutput = 'half an answer' }
    const pending = call(h.ctx, INPUT)
    await until(() => h.ctx.subagents.runs().length === 1, 'the run was handed over')

    tool.dispose()
    const result = await pending
    expect(result.isError).to.equal(true)
    expect(result.content).to.match(/^Subagent cancelled: the subagent tool was unloaded\./)
    expect(result.content).to.contain('Partial output').and.to.contain('half an answer')
    expect(spawn.last.cancels).to.have.length(1)
    await tick()
    expect(spawn.last.disposeCalls).to.equal(1)
    expect(h.ctx.tools.has('subagent')).to.equal(false)
    expect(h.ctx.subagents.runs()).to.deep.equal([])
    // The name is free again.
    await loadTool(h.ctx, { provider: 'spawn' })
    expect(h.ctx.tools.has('subagent')).to.equal(true)
    expect(h.errors).to.deep.equal([])
  })

  it('tool unload while the provider is still starting: the start is abandoned and its late run cleaned up once', async () => {
    const spawn = new ProviderControl()
    spawn.hold = deferred()
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    const tool = await loadTool(h.ctx, { provider: 'spawn' })
    const pending = call(h.ctx, INPUT)
    await until(() => spawn.starts.length === 1, 'the provider was called')
    tool.dispose()
    const result = await pending
    expect(result.isError).to.equal(true)
    expect(result.content).to.match(/^Subagent cancelled: the subagent tool was unloaded\./)
    spawn.hold.resolve()
    await until(() => spawn.runs.length === 1 && spawn.last.disposeCalls === 1, 'the late run was disposed')
    expect(spawn.last.cancels).to.have.length(1)
    expect(h.ctx.subagents.runs()).to.deep.equal([])
  })

  it('reconfiguring the tool (fork.update) reloads it: the old name goes, the new one comes; in-flight calls are cancelled', async () => {
    const spawn = new ProviderControl()
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    const tool = await loadTool(h.ctx, { provider: 'spawn' })
    const pending = call(h.ctx, INPUT)
    await until(() => h.ctx.subagents.runs().length === 1, 'the run was handed over')
    tool.update({ provider: 'spawn', toolName: 'helper' })
    await h.ctx.lifecycle.flush()
    expect(h.ctx.tools.list().map((s) => s.name)).to.deep.equal(['helper'])
    expect(changes).to.deep.equal(['added:subagent', 'removed:subagent', 'added:helper'])
    const result = await pending
    expect(result.content).to.match(/^Subagent cancelled: the subagent tool was unloaded\./)
    expect(spawn.last.disposeCalls).to.equal(1)
    spawn.onRun = (run) => run.complete('renamed')
    expect((await call(h.ctx, INPUT, { name: 'helper' })).content).to.equal('renamed')
    expect(h.errors).to.deep.equal([])
  })

  it('a call that starts in the same tick the tool is unloaded ends with the unload headline; its run is cancelled and disposed once', async () => {
    const spawn = new ProviderControl()
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    const tool = await loadTool(h.ctx, { provider: 'spawn' })
    // A call runs synchronously up to the provider's start, so the unload finds its run starting.
    const pending = call(h.ctx, INPUT)
    tool.dispose()
    const result = await pending
    expect(result.isError).to.equal(true)
    expect(result.content).to.contain('the subagent tool was unloaded')
    await until(() => spawn.runs.every((run) => run.disposeCalls === 1), 'every run it started was disposed')
    expect(spawn.runs.every((run) => run.cancels.length === 1)).to.equal(true)
    expect(h.ctx.subagents.runs()).to.deep.equal([])
  })

  it('a tool plugin disposed while waiting for its provider never mounts later', async () => {
    const tool = await loadTool(h.ctx, { provider: 'spawn' })
    tool.dispose()
    await loadProvider(h.ctx, new ProviderControl(), { name: 'spawn' })
    expect(h.ctx.tools.has('subagent')).to.equal(false)
    expect(changes).to.deep.equal([])
    expect(h.errors).to.deep.equal([])
  })

  it('a tool disposed after its provider left does not come back with the provider', async () => {
    const spawn = new ProviderControl()
    const tool = await loadTool(h.ctx, { provider: 'spawn' })
    const provider = await loadProvider(h.ctx, spawn, { name: 'spawn' })
    provider.dispose()
    tool.dispose()
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    expect(h.ctx.tools.has('subagent')).to.equal(false)
    expect(changes).to.deep.equal(['added:subagent', 'removed:subagent'])
  })

  it('a real parent agent calls the tool, gets the answer and rolls the child usage up as delegated', async () => {
    const spawn = new ProviderControl()
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spawn' })
    spawn.onRun = (run) => run.complete('child answer', { usage: { inputTokens: 10, outputTokens: 5 } })
    const { agent, model } = parentAgent(h.ctx, [
      { toolCalls: [{ id: 'c1', name: 'subagent', input: INPUT }], usage: { inputTokens: 1, outputTokens: 1 } },
      { text: 'parent done', usage: { inputTokens: 1, outputTokens: 1 } },
    ])
    expect(model.requests).to.have.length(0)
    const run = await agent.run('go')
    expect(run.stopReason).to.equal('completed')
    expect(run.text).to.equal('parent done')
    expect(spawn.starts[0].parent).to.equal(agent)
    expect(spawn.starts[0].label).to.equal(INPUT.description)
    expect(spawn.starts[0].prompt).to.equal(INPUT.prompt)
    const toolMessage = agent.transcript.messages.find((m) => m.role === 'tool')
    expect(toolMessage).to.deep.include({ role: 'tool', toolCallId: 'c1', name: 'subagent', content: 'child answer' })
    expect(agent.usage.delegated).to.deep.include({ inputTokens: 10, outputTokens: 5 })
    // The model saw the tool with the two-field schema.
    expect(model.requests[0].tools.map((t) => t.name)).to.deep.equal(['subagent'])
    await agent.dispose()
  })

  it('the parent only sees the tool while its provider is registered', async () => {
    const spawn = new ProviderControl()
    await loadTool(h.ctx, { provider: 'spawn' })
    const absent = await call(h.ctx, INPUT, { agent: caller() })
    expect(absent.isError).to.equal(true)
    expect(absent.content).to.contain('Unknown tool "subagent"')
    expect(spawn.starts).to.have.length(0)
  })
})
