// The bridge in a Koishi 4.18 App with the real ChatLuna from npm (koishi-plugin-chatluna 1.3.36), its
// model served by a loopback chat-completions server through a ChatLuna adapter (support/): ChatLuna's
// agent delegates through our `subagent` tool to a spawn child that runs on a ChatLuna model, limits
// hold, a provider reload removes and restores the ChatLuna tool, aborts cross both ways, and unloading
// leaves nothing registered or running. If ChatLuna cannot start here, `before` fails (nothing is skipped).
import { expect } from 'chai'
import { z } from 'zod'
import type { Context, ForkScope } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as spawn from '@cordis-subagents/provider-spawn'
import * as fork from '@cordis-subagents/provider-fork'
import * as subagentTool from '@cordis-subagents/subagent-tool'
import { eventually } from '@cordis-subagents/test-support'
import * as bridge from '@cordis-subagents/koishi-plugin-chatluna-subagents'
import { type ChatRequestBody, ScriptedModelServer } from './support/model-server.js'
import { type SpecApp, startKoishi } from './support/koishi-app.js'

const LEAD = 'You are the lead agent.'

/** The last message's text, and whether the request is the child's (its prompt starts with CHILD:). */
function lastOf(body: ChatRequestBody) {
  const last = body.messages.at(-1)!
  const user = body.messages.find((m) => m.role === 'user')
  return { last, child: typeof user?.content === 'string' && user.content.startsWith('CHILD:') }
}

describe('ChatLuna bridge in a Koishi app with the real ChatLuna', function () {
  this.timeout(30_000)
  let server: ScriptedModelServer
  let koishi: SpecApp
  let host: Context
  let spawnFork: ForkScope
  let bridgeFork: ForkScope | undefined
  const ends: string[] = []
  const starts: string[] = []

  /** Whether ChatLuna's tool registry lists `name` (its getTool answers a copy even for a missing name). */
  function registered(name: string): boolean {
    return koishi.app.chatluna.platform.getTools().value.includes(name)
  }

  function loadBridge(config: Partial<bridge.Config> = {}) {
    bridgeFork?.dispose()
    bridgeFork = host.plugin(bridge, { model: 'chatluna:loopback/m1', ...config } as bridge.Config)
  }

  before(async () => {
    server = await ScriptedModelServer.start()
    koishi = await startKoishi(server)
    host = koishi.app as unknown as Context
    host.plugin(ToolRegistry)
    host.plugin(AgentRuntime, { model: 'chatluna:loopback/m1' })
    host.plugin(SubagentService)
    spawnFork = host.plugin(spawn, { name: 'spawn' })
    host.plugin(subagentTool, { provider: 'spawn', toolName: 'subagent' })
    host.on('subagent/start', (info) => { starts.push(`${info.provider}:${info.depth}`) })
    host.on('subagent/end', (info, result) => { ends.push(`${info.provider}:${info.depth}:${result.stopReason}`) })
    loadBridge()
    await eventually(() => registered('subagent'), 'the subagent tool registered with ChatLuna')
  })

  after(async () => {
    // Every model request a cancel left hanging was aborted by its client (none is still open).
    expect(server?.hanging).to.equal(0)
    bridgeFork?.dispose()
    await koishi?.close()
    await server?.close()
  })

  beforeEach(() => {
    ends.length = 0
    starts.length = 0
    server.requests.length = 0
  })

  it('ChatLuna\'s agent calls our subagent tool; the spawn child runs on a ChatLuna model; the agent gets the child\'s final text', async () => {
    server.script = (body) => {
      const { last, child } = lastOf(body)
      if (child) return { content: 'one, two, three', usage: { prompt_tokens: 7, completion_tokens: 3 } }
      if (last.role === 'tool') return { content: `lead got: ${String(last.content)}` }
      return { toolCalls: [{ id: 'call-1', name: 'subagent', arguments: { description: 'count', prompt: 'CHILD: count to three' } }] }
    }
    const agent = await koishi.app.chatluna.createAgent({ model: 'loopback/m1', tools: ['subagent'], system: LEAD })
    const out = await agent.generate({ prompt: 'Count to three, delegating it.' })
    expect(out.output).to.equal('lead got: one, two, three')
    // ChatLuna offered the model our tool with the model-facing input { description, prompt }.
    const offered = server.requests[0].tools?.find((tool) => tool.function.name === 'subagent')
    expect(offered?.function.parameters).to.have.nested.property('properties.description')
    expect(offered?.function.parameters).to.have.nested.property('properties.prompt')
    expect(Object.keys((offered?.function.parameters as { properties: object }).properties).sort()).to.deep.equal(['description', 'prompt'])
    // The child's model call went through ChatLuna to the loopback server (model m1), with its own prompt.
    const childCalls = server.requests.filter((body) => lastOf(body).child)
    expect(childCalls).to.have.length(1)
    expect(childCalls[0].model).to.equal('m1')
    expect(starts).to.deep.equal(['spawn:1'])
    expect(ends).to.deep.equal(['spawn:1:completed'])
  })

  /** The lead delegates once and answers with what the tool returned; the child answers `childReply`. */
  function leadDelegates(child: () => ReturnType<typeof server.script>) {
    server.script = (body) => {
      const { last, child: isChild } = lastOf(body)
      if (isChild) return child()
      if (last.role === 'tool') return { content: `lead got: ${String(last.content)}` }
      return { toolCalls: [{ id: 'call-1', name: 'subagent', arguments: { description: 'count', prompt: 'CHILD: count to three' } }] }
    }
  }

  async function lead(signal?: AbortSignal) {
    const agent = await koishi.app.chatluna.createAgent({ model: 'loopback/m1', tools: ['subagent'], system: LEAD })
    return agent.generate({ prompt: 'Count to three, delegating it.', signal })
  }

  it('the bridge\'s depth ceiling still refuses: with maxDepth 0 no child starts and ChatLuna\'s agent reads the refusal', async () => {
    loadBridge({ maxDepth: 0 })
    try {
      await eventually(() => registered('subagent'), 'the tool re-registered')
      leadDelegates(() => ({ content: 'never' }))
      const out = await lead()
      expect(out.output).to.match(/^lead got: /)
      expect(out.output).to.include('DEPTH_EXCEEDED')
      expect(starts).to.deep.equal([])
      expect(server.requests.filter((body) => lastOf(body).child)).to.have.length(0)
    } finally {
      loadBridge()
    }
  })

  it('a tree budget still stops the child: maxTokens 12 ends it `budget` after its first ChatLuna model call', async () => {
    loadBridge({ budget: { maxTokens: 12 } })
    try {
      await eventually(() => registered('subagent'), 'the tool re-registered')
      leadDelegates(() => ({ toolCalls: [{ id: 'c', name: 'subagent', arguments: { description: 'again', prompt: 'CHILD: again' } }], usage: { prompt_tokens: 10, completion_tokens: 5 } }))
      const out = await lead()
      expect(out.output).to.match(/^lead got: /)
      expect(ends).to.deep.equal(['spawn:1:budget'])
      expect(server.requests.filter((body) => lastOf(body).child)).to.have.length(1)
    } finally {
      loadBridge()
    }
  })

  it('reloading the provider removes the ChatLuna tool and restores it; a delegation works again', async () => {
    spawnFork.dispose()
    expect(registered('subagent')).to.equal(false)
    spawnFork = host.plugin(spawn, { name: 'spawn' })
    await eventually(() => registered('subagent'), 'the tool back in ChatLuna')
    leadDelegates(() => ({ content: 'back again' }))
    expect((await lead()).output).to.equal('lead got: back again')
    expect(ends).to.deep.equal(['spawn:1:completed'])
  })

  it('ChatLuna\'s abort cancels the child, and the child\'s abort cancels its ChatLuna model request', async () => {
    leadDelegates(() => ({ hang: true }))
    const controller = new AbortController()
    const settled = lead(controller.signal).then(() => 'resolved', () => 'rejected')
    await eventually(() => server.requests.some((body) => lastOf(body).child), 'the child\'s model request reached the server')
    controller.abort(new Error('the person stopped ChatLuna'))
    expect(await settled).to.be.oneOf(['resolved', 'rejected'])
    await eventually(() => ends.length === 1, 'the child ended')
    expect(ends).to.deep.equal(['spawn:1:aborted'])
    await eventually(() => server.closedEarly >= 1, 'the child\'s HTTP request was aborted')
    expect(host.subagents.runs()).to.have.length(0)
  })

  it('unloading the bridge mid-call aborts the delegation and unregisters the tool; the ChatLuna agent gets the cancellation as the tool result', async () => {
    leadDelegates(() => ({ hang: true }))
    const out = lead()
    await eventually(() => server.requests.some((body) => lastOf(body).child), 'the child\'s model request reached the server')
    bridgeFork!.dispose()
    bridgeFork = undefined
    expect(registered('subagent')).to.equal(false)
    expect((await out).output).to.match(/^lead got: .*abort/i)
    expect(ends).to.deep.equal(['spawn:1:aborted'])
    expect(host.subagents.runs()).to.have.length(0)
    // And the model is gone with it: a ref to `chatluna` no longer resolves.
    expect(host.agents.resolveModel('chatluna:loopback/m1')).to.have.property('error')
    loadBridge()
    await eventually(() => registered('subagent'), 'the tool re-registered')
  })

  it('every loaded delegation tool is bridged: a second load (fork) appears in ChatLuna, delegates, and goes with its plugin', async () => {
    const forkProvider = host.plugin(fork, { name: 'fork' })
    const forkTool = host.plugin(subagentTool, { provider: 'fork', toolName: 'subagent_fork' })
    try {
      await eventually(() => registered('subagent_fork'), 'subagent_fork registered with ChatLuna')
      server.script = (body) => {
        const { last, child } = lastOf(body)
        if (child) return { content: 'forked answer' }
        if (last.role === 'tool') return { content: `lead got: ${String(last.content)}` }
        return { toolCalls: [{ id: 'call-f', name: 'subagent_fork', arguments: { description: 'fork it', prompt: 'CHILD: answer' } }] }
      }
      const agent = await koishi.app.chatluna.createAgent({ model: 'loopback/m1', tools: ['subagent_fork'], system: LEAD })
      expect((await agent.generate({ prompt: 'Fork it.' })).output).to.equal('lead got: forked answer')
      expect(ends).to.deep.equal(['fork:1:completed'])
    } finally {
      forkTool.dispose()
      forkProvider.dispose()
    }
    expect(registered('subagent_fork')).to.equal(false)
    expect(registered('subagent')).to.equal(true)
  })

  it('a ChatLuna tool-updated listener that throws while the bridge registers: every tool is still registered, and all go when the bridge unloads', async () => {
    const forkProvider = host.plugin(fork, { name: 'fork' })
    const forkTool = host.plugin(subagentTool, { provider: 'fork', toolName: 'subagent_fork' })
    let off: (() => void) | undefined
    try {
      await eventually(() => registered('subagent_fork'), 'subagent_fork registered with ChatLuna')
      bridgeFork!.dispose()
      bridgeFork = undefined
      expect(registered('subagent') || registered('subagent_fork')).to.equal(false)
      // Koishi passes a listener's throw on to the emitter: ChatLuna's registerTool throws after it stored the tool.
      let told = 0
      const listen = koishi.app.on.bind(koishi.app) as unknown as (name: string, listener: () => void) => () => void
      off = listen('chatluna/tool-updated', () => { if (++told === 2) throw new Error('a listener broke') })
      loadBridge()
      await eventually(() => registered('subagent') && registered('subagent_fork'), 'both tools registered with ChatLuna')
      expect(told).to.be.at.least(2)
      bridgeFork!.dispose()
      bridgeFork = undefined
      expect(registered('subagent'), 'subagent unregistered').to.equal(false)
      expect(registered('subagent_fork'), 'subagent_fork unregistered').to.equal(false)
    } finally {
      off?.()
      forkTool.dispose()
      forkProvider.dispose()
      loadBridge()
      await eventually(() => registered('subagent'), 'the subagent tool registered with ChatLuna again')
    }
  })

  describe('ChatLuna\'s models as ctx.agents models', () => {
    it('maps tool calls, results and usage both ways', async () => {
      const dispose = host.tools.register({
        name: 'echo', description: 'Echo the text.', input: z.object({ text: z.string() }),
        execute: async (input: { text: string }) => ({ content: `echoed ${input.text}` }),
      } as never)
      server.script = (body) => {
        const last = body.messages.at(-1)!
        if (last.role === 'tool') return { content: `done: ${String(last.content)}`, usage: { prompt_tokens: 20, completion_tokens: 4 } }
        return { toolCalls: [{ id: 'e1', name: 'echo', arguments: { text: 'hi' } }], usage: { prompt_tokens: 11, completion_tokens: 2 } }
      }
      const agent = host.agents.create({ model: 'chatluna:loopback/m1', persona: 'Be brief.' })
      try {
        const result = await agent.run('Echo hi.')
        expect(result.stopReason).to.equal('completed')
        expect(result.text).to.equal('done: echoed hi')
        expect(agent.usage.own).to.include({ inputTokens: 31, outputTokens: 6 })
        const [first, second] = server.requests
        expect(first.messages[0]).to.deep.include({ role: 'system', content: 'Be brief.' })
        expect(first.tools?.map((tool) => tool.function.name)).to.include('echo')
        expect(second.messages.at(-2)?.tool_calls?.[0]).to.deep.include({ id: 'e1' })
        expect(second.messages.at(-1)).to.deep.include({ role: 'tool', tool_call_id: 'e1', content: 'echoed hi' })
      } finally {
        await agent.dispose()
        dispose()
      }
    })

    it('a failing ChatLuna model ends the run `error` with a diagnostic; an unknown ChatLuna model is named', async () => {
      server.script = () => ({ status: 500 })
      const agent = host.agents.create({ model: 'chatluna:loopback/m1' })
      const unknown = host.agents.create({ model: 'chatluna:nowhere/x' })
      try {
        const failed = await agent.run('Hi.')
        expect(failed.stopReason).to.equal('error')
        expect(failed.diagnostic).to.include('ChatLuna model "loopback/m1" failed')
        const missing = await unknown.run('Hi.')
        expect(missing.stopReason).to.equal('error')
        expect(missing.diagnostic).to.include('ChatLuna has no model "nowhere/x"')
      } finally {
        await agent.dispose()
        await unknown.dispose()
      }
    })
  })
  it('unloading the bridge unregisters its tools and its model and leaves no run; loading it again restores both', async () => {
    expect(registered('subagent')).to.equal(true)
    bridgeFork!.dispose()
    bridgeFork = undefined
    expect(registered('subagent')).to.equal(false)
    expect(host.agents.resolveModel('chatluna:loopback/m1')).to.have.property('error')
    expect(host.subagents.runs()).to.have.length(0)
    loadBridge()
    expect(registered('subagent')).to.equal(true)
    expect(host.agents.resolveModel('chatluna:loopback/m1')).to.not.have.property('error')
  })
})
