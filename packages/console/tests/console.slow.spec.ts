import { expect } from 'chai'
import type { GenerateRequest, ScriptedResponse } from '@cordis-subagents/agent'
import { FakeProvider } from '@cordis-subagents/subagents-service/testing'
import type { NodeView } from '@cordis-subagents/console'
import { Context } from 'cordis'
import AgentRuntime from '@cordis-subagents/agent'
import Tools from '@cordis-subagents/tools'
import SubagentService from '@cordis-subagents/subagents-service'
import SubagentConsole from '@cordis-subagents/console'
import { freePort, reloadedWhileStarting, unloadedWhileStarting } from '@cordis-subagents/test-support'
import { bearer, call, consoleHost, eventually, HOLD } from './helpers.js'

type Host = Awaited<ReturnType<typeof consoleHost>>

const delegate = (tool: string, description: string, prompt: string) => ({ name: tool, input: { description, prompt } })
const hasResults = (request: GenerateRequest) => request.messages.at(-1)?.role === 'tool'
/** A root that delegates `calls` in its first step, then answers. */
const rootDelegating = (...calls: ReturnType<typeof delegate>[]) => (request: GenerateRequest): ScriptedResponse =>
  hasResults(request) ? { text: 'all done' } : { text: 'delegating', toolCalls: calls }

describe('console: the tree, the transcript and the actions over HTTP (real Context, spawn children)', function () {
  this.timeout(20_000)
  let host: Host | undefined

  afterEach(async () => {
    await host?.stop()
    host = undefined
  })

  const snapshot = async () => JSON.parse((await call(host!.view.port, '/api/snapshot', { headers: bearer(host!.view.token) })).body) as { trees: unknown[]; nodes: NodeView[] }
  const post = (path: string, body: unknown) => call(host!.view.port, path, { method: 'POST', headers: { ...bearer(host!.view.token), 'content-type': 'application/json' }, body: JSON.stringify(body) })

  it('unloaded while it starts listening (at any turn of the loop), it leaves nothing listening: the port is free again', async () => {
    const ctx = new Context()
    ctx.plugin(Tools)
    ctx.plugin(AgentRuntime)
    ctx.plugin(SubagentService)
    await ctx.start()
    try {
      const port = await freePort()
      // And the port serves a load that stays.
      expect(await unloadedWhileStarting(() => ctx.plugin(SubagentConsole, { port }), port)).to.deep.equal({ left: [], stays: true })
      expect(ctx.get('subagentConsole')?.port).to.equal(port)
    } finally {
      await ctx.stop()
    }
  })

  it('reloaded at once while it starts (a quick double reload), the load that follows takes its fixed port every time', async () => {
    const ctx = new Context()
    ctx.plugin(Tools)
    ctx.plugin(AgentRuntime)
    ctx.plugin(SubagentService)
    await ctx.start()
    try {
      const port = await freePort()
      expect(await reloadedWhileStarting(() => ctx.plugin(SubagentConsole, { port }), port)).to.deep.equal([])
    } finally {
      await ctx.stop()
    }
  })

  it('a root run with two children: both nodes under the root, ended completed, with steps, tool calls, tokens and budget', async () => {
    host = await consoleHost(rootDelegating(delegate('subagent', 'first part', 'child: one'), delegate('subagent', 'second part', 'child: two')))
    const result = await host.ctx.agents.create({ label: 'main' }).run('go')
    expect(result.stopReason).to.equal('completed')
    const { trees, nodes } = await snapshot()
    expect(trees).to.have.length(1)
    const [root, ...children] = nodes
    expect(root).to.include({ transport: 'root', label: 'main', state: 'ended', stopReason: 'completed', steps: 2, toolCalls: 2, tokens: 60 })
    // 60: the root's own 2 × 10 and its children's 2 × 20, delegated usage included
    expect(children.map((node) => [node.label, node.transport, node.parentRunId, node.state, node.stopReason])).to.deep.equal([
      ['first part', 'spawn', root.runId, 'ended', 'completed'],
      ['second part', 'spawn', root.runId, 'ended', 'completed'],
    ])
    for (const child of children) {
      expect(child).to.include({ steps: 2, toolCalls: 1, tokens: 20, background: false, depth: 1 })
      expect(child.budget[0]).to.deep.equal({ name: 'steps per turn', used: 2, limit: 25 })
      expect(child.can).to.deep.equal({ cancel: false, send: false, answer: false })
    }
    expect(children[0].output).to.equal('answer to child: one')
  })

  it("a child's transcript: its own messages with the tool call and result, paginated", async () => {
    host = await consoleHost(rootDelegating(delegate('subagent', 'one', 'child: one')))
    await host.ctx.agents.create().run('go')
    const child = (await snapshot()).nodes[1]
    const page = JSON.parse((await call(host.view.port, `/api/runs/${child.runId}/transcript?offset=0&limit=2`, { headers: bearer(host.view.token) })).body)
    expect(page).to.deep.include({ source: 'agent', offset: 0, first: 0, total: 4 })
    expect(page.entries).to.deep.equal([
      { kind: 'user', text: 'child: one' },
      { kind: 'tool-call', tool: 'lookup', text: '{"q":"child: one"}' },
    ])
    const next = JSON.parse((await call(host.view.port, `/api/runs/${child.runId}/transcript?offset=2&limit=2`, { headers: bearer(host.view.token) })).body)
    expect(next.entries).to.deep.equal([
      { kind: 'tool-result', tool: 'lookup', text: 'found child: one' },
      { kind: 'assistant', text: 'answer to child: one' },
    ])
    const tooBig = await call(host.view.port, `/api/runs/${child.runId}/transcript?limit=101`, { headers: bearer(host.view.token) })
    expect(tooBig.status).to.equal(400)
  })

  it('cancel from the page: a background child ends aborted with the reason, its sibling goes on', async () => {
    host = await consoleHost((request) => {
      if (hasResults(request)) return { text: 'started them' }
      return { toolCalls: [delegate('subagent_bg', 'held', `${HOLD}: one`), delegate('subagent_bg', 'other', `${HOLD}: two`)] }
    })
    const agent = host.ctx.agents.create()
    await agent.run('go')
    await eventually(async () => (await snapshot()).nodes.filter((node) => node.can.cancel).length === 2, 'both background children can be cancelled')
    const [, held, other] = (await snapshot()).nodes
    expect(held).to.include({ background: true, state: 'running', transport: 'spawn' })
    const reply = await post(`/api/runs/${held.runId}/cancel`, {})
    expect(reply.status, reply.body).to.equal(200)
    await eventually(async () => (await snapshot()).nodes[1].state === 'ended', 'the cancelled child ended')
    const after = (await snapshot()).nodes
    // Its result went to the root's inbox after the root's turn ended: nothing has read it (issue 44 item 4).
    expect(after[1]).to.include({ stopReason: 'aborted', unread: true })
    expect(after[2].unread).to.equal(undefined)
    expect(host.ctx.subagents.account(agent)).to.deep.include({ total: 2, unread: 1, states: { aborted: 1, running: 1 } })
    expect(after[1].diagnostic).to.include('cancelled from the console')
    expect(after[2]).to.include({ runId: other.runId, state: 'running' })
    const again = await post(`/api/runs/${held.runId}/cancel`, {})
    expect(again.status).to.equal(409)
    expect(JSON.parse(again.body).error.code).to.equal('NOT_RUNNING')
    await agent.dispose()
  })

  it('cancel a synchronous in-process child: its turn is aborted, the parent gets the aborted result', async () => {
    host = await consoleHost(rootDelegating(delegate('subagent', 'held', `${HOLD}: sync`)))
    const running = host.ctx.agents.create().run('go')
    await eventually(async () => (await snapshot()).nodes[1]?.can.cancel === true, 'the child can be cancelled')
    expect((await post(`/api/runs/${(await snapshot()).nodes[1].runId}/cancel`, {})).status).to.equal(200)
    expect((await running).stopReason).to.equal('completed')
    const child = (await snapshot()).nodes[1]
    expect(child).to.include({ state: 'ended', stopReason: 'aborted' })
  })

  it('send from the page is taken by the run of a background child (steering); a message to an ended child is NOT_RUNNING', async () => {
    host = await consoleHost((request) => hasResults(request) ? { text: 'started' } : { toolCalls: [delegate('subagent_bg', 'held', `${HOLD}: steer`)] })
    const agent = host.ctx.agents.create()
    await agent.run('go')
    await eventually(async () => (await snapshot()).nodes[1]?.can.send === true, 'the child can take messages')
    const child = (await snapshot()).nodes[1]
    expect((await post(`/api/runs/${child.runId}/send`, { message: 'also look at X' })).status).to.equal(200)
    expect((await post(`/api/runs/${child.runId}/send`, { message: '  ' })).status).to.equal(400)
    await post(`/api/runs/${child.runId}/cancel`, {})
    await eventually(async () => (await snapshot()).nodes[1].state === 'ended', 'the child ended')
    const late = await post(`/api/runs/${child.runId}/send`, { message: 'too late' })
    expect(JSON.parse(late.body).error.code).to.equal('NOT_RUNNING')
    await agent.dispose()
  })

  it('a synchronous child of a provider elsewhere is cancelled from here through ctx.subagents.cancel: its holder gets aborted, the rest goes on', async () => {
    host = await consoleHost(() => ({ text: 'unused' }))
    const fake = new FakeProvider('fake')
    host.ctx.subagents.register(fake)
    const parent = host.ctx.agents.create()
    const signal = new AbortController().signal
    const run = await host.ctx.subagents.delegate('fake', { prompt: 'far away', label: 'far', parent, signal })
    const sibling = await host.ctx.subagents.delegate('fake', { prompt: 'also far', label: 'sibling', parent, signal })
    const [synthetic, child] = (await snapshot()).nodes
    expect(synthetic).to.include({ transport: 'root', state: 'running', label: `agent ${parent.id}` })
    expect(child).to.include({ transport: 'remote', label: 'far', parentRunId: synthetic.runId })
    expect(child.can).to.deep.equal({ cancel: true, send: false, answer: false })
    const reply = await post(`/api/runs/${child.runId}/cancel`, {})
    expect(reply.status).to.equal(200)
    expect(fake.runs[0].cancels).to.deep.equal(['cancelled from the console'])
    expect(await run.result).to.include({ stopReason: 'aborted' })
    await run.dispose()
    await eventually(async () => (await snapshot()).nodes[1].state === 'ended', 'the cancelled child ended')
    expect((await snapshot()).nodes[1]).to.include({ stopReason: 'aborted' })
    expect(fake.runs[1].cancels, 'its sibling goes on').to.have.length(0)
    const again = await post(`/api/runs/${child.runId}/cancel`, {})
    expect(JSON.parse(again.body).error.code).to.equal('NOT_RUNNING')
    fake.runs[1].complete('done')
    await sibling.result
    await sibling.dispose()
    await eventually(async () => (await snapshot()).nodes[0].state === 'ended', 'the stand-in root ends with its last child')
  })
})

