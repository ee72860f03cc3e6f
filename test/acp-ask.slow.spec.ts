// Issue 30 over ACP, through the real service, subagent tool and provider-acp, with real agent
// subprocesses: an ACP permission request escalated to the root and answered there, and a served
// host of ours (serve-acp's bin) whose turn parks on a question, answered across the process boundary.
import { expect } from 'chai'
import { z } from 'zod'
import { ScriptedModel, type GenerateRequest, type ToolMessage } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import * as AcpProvider from '@cordis-subagents/provider-acp'
import { assertNoLeftovers, FAST, fixtureArgs, harness, type Harness } from '../packages/provider-acp/tests/helpers.js'
import { appYml, BIN, build, Workspace } from '../packages/serve-acp/tests/helpers.js'

function lastToolResult(request: GenerateRequest): ToolMessage {
  const tool = request.messages.filter((message): message is ToolMessage => message.role === 'tool').at(-1)
  if (!tool) throw new Error('no tool result in the transcript')
  return tool
}

describe('ACP children that ask (issue 30): questions across the process boundary', function () {
  this.timeout(60_000)
  let h: Harness
  let ws: Workspace

  before(() => build())
  beforeEach(async () => {
    h = await harness()
    ws = new Workspace()
  })
  afterEach(async () => {
    await h.stop()
    await ws.dispose()
    assertNoLeftovers()
  })

  /** A parent whose model delegates `prompt` through subagent_acp, then repeats the tool result. */
  async function setup(provider: Omit<AcpProvider.Config, 'name'>, prompt: string, tool: Record<string, unknown> = { questions: 'escalate' }) {
    const { ctx } = h
    ctx.plugin(SubagentService)
    ctx.plugin(AcpProvider, { ...FAST, ...provider })
    ctx.plugin(SubagentTool, { provider: 'acp', toolName: 'subagent_acp', ...tool })
    await ctx.lifecycle.flush()
    ctx.agents.registerModel('scripted', new ScriptedModel([
      ScriptedModel.call('subagent_acp', { description: 'Ask the ACP child', prompt }),
      (request) => {
        const result = lastToolResult(request)
        return { text: `${result.isError ? 'Child failed' : 'Child said'}: ${result.content}` }
      },
    ]))
    return ctx.agents.create({ model: 'scripted' })
  }

  /**
   * The served app's own tool ceiling is the parent's tools (SUBAGENT_ALLOWED_TOOLS): the parent
   * must be allowed `ask` for the served agent to use its `ask` tool.
   */
  const servedHost = () => {
    h.ctx.tools.register({ name: 'ask', description: 'Asks the user.', input: z.object({ question: z.string() }), execute: async () => ({ content: 'unused' }) })
    return servedHostCommand()
  }
  const servedHostCommand = () => ({ command: process.execPath, args: [BIN, ws.file('served.yml', appYml({ serve: `store: ${JSON.stringify(ws.store)}` }))] })

  it('permission escalate: the child\'s permission request reaches the root as pending; resume "allow" runs the tool and completes', async () => {
    const parent = await setup({ command: process.execPath, args: fixtureArgs('ask-permission'), permission: 'escalate' }, 'Clean up the build.')
    const first = await parent.run('Clean up using a subagent.')
    expect(first.stopReason, first.diagnostic).to.equal('pending')
    const question = first.question!
    expect(question.kind).to.equal('permission')
    expect(question.text).to.include('Delete build/').and.include('locations: /work/build')
    expect(question.options!.map((option) => option.id)).to.deep.equal(['yes', 'always', 'no'])
    // The path names the child run the question came through (the holder put its id in front).
    const [runId] = question.path
    expect(question.path).to.have.length(1)
    expect(h.ctx.subagents.pending().map((entry) => entry.runId)).to.deep.equal([runId])
    expect(parent.parked).to.deep.equal(question)

    const final = await parent.resume('allow')
    expect(final.stopReason, final.diagnostic).to.equal('completed')
    expect(final.text).to.equal('Child said: Delete build/: done (yes). ')
    // The turn grew: the second model call and the child's usage are counted on top of the first leg.
    expect(final.steps).to.equal(2)
    expect(parent.usage.delegated).to.deep.include({ inputTokens: 5, outputTokens: 2 })
    expect(h.ctx.subagents.pending()).to.deep.equal([])
    await parent.dispose()
  })

  it('answered "reject" through ctx.subagents.resume by run id: the child adapts; the tool result says so', async () => {
    const parent = await setup({ command: process.execPath, args: fixtureArgs('ask-permission'), permission: 'escalate' }, 'Clean up the build.')
    const first = await parent.run('Clean up using a subagent.')
    const [runId] = first.question!.path
    const outcome = await h.ctx.subagents.resume(runId!, 'reject')
    expect(outcome).to.deep.include({ stopReason: 'completed', output: 'Delete build/: refused, so I left it alone. ' })
    await parent.dispose()
  })

  it('a refused answer through the service leaves the child parked (pending again, the same question); a good one completes it', async () => {
    await setup({ command: process.execPath, args: fixtureArgs('ask-permission'), permission: 'escalate' }, 'unused')
    const owner = h.ctx.agents.create({ model: 'scripted' })
    const handle = await h.ctx.subagents.delegate('acp', { prompt: 'Clean up.', parent: owner, signal: new AbortController().signal })
    const { question } = await handle.result
    const again = await handle.resume('maybe')
    expect(again.stopReason).to.equal('pending')
    expect(again.question).to.deep.equal(question)
    expect(again.diagnostic).to.match(/names none of the options/)
    expect(handle.state).to.equal('parked')
    expect((await h.ctx.subagents.resume(handle.id, 'Allow')).stopReason).to.equal('completed')
    await handle.dispose()
    await owner.dispose()
  })

  it('a served host of ours whose turn parks: provider-acp reports pending; the answer goes back as the next prompt', async () => {
    const parent = h.ctx
    await setup(servedHost(), 'unused')
    const owner = parent.agents.create({ model: 'scripted' })
    const handle = await parent.subagents.delegate('acp', { prompt: 'ask Which branch should I merge?', parent: owner, signal: new AbortController().signal })
    const first = await handle.result
    expect(first.stopReason, first.diagnostic).to.equal('pending')
    expect(first.question).to.deep.include({ kind: 'ask', text: 'Which branch should I merge?', path: [] })
    expect(handle.state).to.equal('parked')
    const final = await handle.resume('main')
    expect(final).to.deep.include({ stopReason: 'completed', output: 'told: main' })
    // Usage is cumulative over the session: both model calls of the served agent.
    expect(final.usage).to.deep.include({ inputTokens: 20, outputTokens: 10 })
    await handle.dispose()
    await owner.dispose()
  })

  it('a tree of our hosts over ACP: the served agent\'s question reaches the root, and the root\'s answer completes it', async () => {
    const parent = await setup(servedHost(), 'ask Squash the commits?')
    const first = await parent.run('Merge using a subagent.')
    expect(first.stopReason, first.diagnostic).to.equal('pending')
    expect(first.question).to.deep.include({ kind: 'ask', text: 'Squash the commits?' })
    expect(first.question!.path).to.have.length(1)
    const final = await parent.resume('yes, squash')
    expect(final.stopReason, final.diagnostic).to.equal('completed')
    expect(final.text).to.equal('Child said: told: yes, squash')
    await parent.dispose()
  })
})
