// Issue 38, item 10, the model's side: a parent delegates to spawn (the sync subagent tool), gets the
// child's answer, then continues that finished child with subagent_continue (named by the description
// it gave it): the child's new turn runs on its whole transcript and its answer is the verb's result.
// Another agent cannot continue it (only its own children).
import { expect } from 'chai'
import { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { loadTool, tail } from './support/background.js'
import { startHost, type Host } from './support/host.js'

const users = (request: GenerateRequest) => request.messages.filter((m) => m.role === 'user').map((m) => m.content)

describe('subagent_continue: a parent continues a child that finished', () => {
  let host: Host

  afterEach(async () => {
    await host?.stop()
  })

  it('a new turn on the child\'s transcript, its answer as the verb\'s result; only the parent that delegated it can', async () => {
    host = await startHost()
    const { ctx } = host
    const child = new ScriptedModel((request) => ({ text: `draft ${users(request).length}: ${users(request).join(' / ')}` }))
    ctx.agents.registerModel('child', child)
    ctx.plugin(Spawn as any, { name: 'spawn' })
    await loadTool(ctx, { provider: 'spawn', agentOptions: { model: 'child' } })
    ctx.plugin(SubagentControl as any, {})
    await ctx.lifecycle.flush()

    const parentModel = new ScriptedModel([
      { toolCalls: [{ name: 'subagent', input: { description: 'release notes', prompt: 'Write the release notes.' } }] },
      { toolCalls: [{ name: 'subagent_continue', input: { subagent: 'release notes', message: 'Make them shorter.' } }] },
      { text: 'done' },
    ])
    ctx.agents.registerModel('parent', parentModel)
    const parent = ctx.agents.create({ model: 'parent' })
    expect((await parent.run('Prepare the release.')).stopReason).to.equal('completed')

    expect(tail(parentModel.requests[1], 1)[0]).to.equal('tool(subagent): draft 1: Write the release notes.')
    const [continued] = tail(parentModel.requests[2], 1)
    expect(continued).to.match(/^tool\(subagent_continue\): \[Subagent run-\S+ continued\]\n\ndraft 2: Write the release notes\. \/ Make them shorter\.$/)
    // The child's new turn saw its first turn's answer too.
    const last = child.requests.at(-1)!.messages.map((m) => `${m.role}: ${m.content}`)
    expect(last).to.deep.equal(['user: Write the release notes.', 'assistant: draft 1: Write the release notes.', 'user: Make them shorter.'])

    // Another root agent has no such subagent: the verb names none and runs nothing.
    const stranger = ctx.agents.create({ model: 'parent' })
    const exec = { signal: new AbortController().signal, agent: stranger, toolCallId: 'c' }
    const refused = await stranger.tools.execute({ name: 'subagent_continue', input: { subagent: 'release notes', message: 'x' } }, exec)
    expect(refused.isError).to.equal(true)
    expect(refused.content).to.match(/^You have no finished subagent "release notes" that can be continued\./)
    const runId = /\[Subagent (run-\S+) continued\]/.exec(continued)![1]
    const byId = await stranger.tools.execute({ name: 'subagent_continue', input: { subagent: runId, message: 'x' } }, exec)
    expect(byId.isError).to.equal(true)
    expect(child.callCount).to.equal(2)
  })
})
