// PENDING until the in-process providers implement `SubagentRun.send` (the steering branch): rename
// to background-steer-spawn.spec.ts at that merge. Against spawn without `send`, subagent_send
// answers STEER_UNSUPPORTED and this spec fails at the first expectation on the child's transcript.
//
// End to end over the real spawn provider: a parent starts a background child, the child works (a
// slow tool), the parent steers it with subagent_send, the child reads the message at its next
// step and its answer reflects it; the parent collects that answer with subagent_wait.
import { expect } from 'chai'
import { z } from 'zod'
import { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { loadTool, start, tail } from './support/background.js'
import { startHost, type Host } from './support/host.js'
import { deferred, until } from './support/async.js'

const STEER = 'Also list the CHANGELOG.'

describe('background steering over spawn (subagent_send → the child\'s next step)', () => {
  let host: Host
  /** Opened after each test as well: a failed expectation must not leave the child's tool (and its run) pending. */
  let gate = deferred<void>()

  afterEach(async () => {
    gate.resolve()
    await host?.stop()
  })

  it('a message sent mid-run is read by the child at its next step and shapes its answer', async () => {
    host = await startHost()
    const { ctx } = host
    gate = deferred<void>()
    ctx.tools.register({ name: 'slow_read', description: 'reads slowly', input: z.strictObject({}), execute: async () => { await gate.promise; return { content: 'README.md' } } })
    const child = new ScriptedModel((request: GenerateRequest) => {
      const toolDone = request.messages.some((m) => m.role === 'tool')
      if (!toolDone) return { toolCalls: [{ name: 'slow_read', input: {} }] }
      const steered = request.messages.some((m) => m.role === 'user' && m.content.includes(STEER))
      return { text: steered ? 'Files: README.md, CHANGELOG.md (as you asked).' : 'Files: README.md.' }
    })
    ctx.agents.registerModel('child', child)
    ctx.plugin(Spawn as any, { name: 'spawn' })
    await loadTool(ctx, { provider: 'spawn', mode: 'background', agentOptions: { model: 'child' } })
    ctx.plugin(SubagentControl as any, {})
    await ctx.lifecycle.flush()

    const parentModel = new ScriptedModel([
      { toolCalls: [start('list files')] },
      { toolCalls: [{ name: 'subagent_send', input: { handle: 'bg-1', message: STEER } }] },
      { toolCalls: [{ name: 'subagent_wait', input: { handles: ['bg-1'] } }] },
      { text: 'done' },
    ])
    ctx.agents.registerModel('parent', parentModel)
    const parent = ctx.agents.create({ model: 'parent' })
    const running = parent.run('List the files.')
    await until(() => parentModel.callCount >= 3, 'the parent has sent its message and waits')
    expect(tail(parentModel.requests[2], 1)[0]).to.match(/^tool\(subagent_send\): Sent to bg-1\./)
    gate.resolve()
    const result = await running
    expect(result.stopReason).to.equal('completed')
    expect(child.requests.at(-1)!.messages.some((m) => m.role === 'user' && m.content.includes(STEER))).to.equal(true)
    expect(tail(parentModel.requests[3], 1)[0]).to.equal('tool(subagent_wait): [Background subagent bg-1 "list files" finished]\n\n> Files: README.md, CHANGELOG.md (as you asked).')
  })
})
