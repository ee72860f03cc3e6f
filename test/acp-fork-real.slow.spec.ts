// A fork child on the real Claude Code adapter (claude-agent-acp advertises sessionCapabilities.fork):
// a parent's second fork delegation forks the session its first one left (session/fork, in a new
// adapter process), so the model sees the first child's conversation without it being sent again,
// plus the parent's turns completed since. Loopback fake model; nothing leaves 127.0.0.1.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { Context, Logger } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import { AgentRuntime, ScriptedModel } from '@cordis-subagents/agent'
import type { SubagentUpdate } from '@cordis-subagents/subagents-service'
import { createAcpProvider } from '@cordis-subagents/provider-acp'
import { type RealAgent, startRealAgent } from './support/real-agents.js'
import { reaped } from './support/processes-by-env.js'

describe('a fork child on the real Claude adapter (session/fork of the parent\'s kept session)', function () {
  this.timeout(180_000)
  let agent: RealAgent | undefined
  let ctx: Context | undefined
  let cwd: string | undefined

  afterEach(async () => {
    await ctx?.stop()
    await agent?.close()
    if (cwd) rmSync(cwd, { recursive: true, force: true })
    agent = ctx = cwd = undefined
  })

  it('the second delegation forks the first child\'s session and seeds only the newer turn; every adapter process is reaped', async () => {
    agent = await startRealAgent('claude', (request) => ({ text: request.tools.length ? `child answer ${request.toolResults.length}` : 'side request' }))
    cwd = mkdtempSync(join(tmpdir(), 'acp-fork-real-'))
    ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime)
    await ctx.start()
    ctx.agents.registerModel('parent', new ScriptedModel(() => ({ text: 'noted' })))
    const parent = ctx.agents.create({ model: 'parent', cwd })
    const acp = createAcpProvider({
      command: agent.command, args: agent.args, env: agent.env, inherit: 'core', startupTimeout: 60_000,
      context: 'fork', resume: 'per-parent', logger: new Logger('acp-fork-real'),
    })
    const delegate = async (prompt: string) => {
      const updates: SubagentUpdate[] = []
      const run = await acp.start({
        prompt, parent, signal: new AbortController().signal, runId: `real-fork-${prompt.length}`, depth: 1, onUpdate: (update) => updates.push(update),
      })
      const result = await run.result
      await run.dispose()
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      return { childId: (run as { childId?: string }).childId, statuses: updates.filter((update) => update.kind === 'status').map((update) => update.text) }
    }
    const mainRequests = () => agent!.model.requests.filter((request) => request.tools.length)

    await parent.run('Remember the word PLUM-7431.')
    const first = await delegate('First fork task: say hello.')
    const firstBody = JSON.stringify(mainRequests().at(-1)!.body)
    expect(firstBody).to.include('PLUM-7431')
    expect(firstBody).to.include('First fork task: say hello.')

    await parent.run('Also remember KIWI-5520.')
    const second = await delegate('Second fork task: say goodbye.')
    expect(second.statuses).to.deep.equal(['forked session'])
    expect(second.childId).to.be.a('string').and.not.equal(first.childId)
    const secondBody = JSON.stringify(mainRequests().at(-1)!.body)
    // The forked session holds the first child's conversation (its seed and task): the adapter sends it to the model.
    expect(secondBody).to.include('First fork task: say hello.')
    expect(secondBody).to.include('PLUM-7431')
    expect(secondBody).to.include('KIWI-5520')
    expect(secondBody).to.include('Second fork task: say goodbye.')
    // The newer turn came as the only seed of this prompt: PLUM was not sent again (it appears once, from the fork).
    expect(secondBody.split('PLUM-7431').length - 1).to.equal(firstBody.split('PLUM-7431').length - 1)

    await acp.stop()
    await parent.dispose()
    expect(await reaped('HOME', agent.home), 'adapter processes left').to.deep.equal([])
  })
})
