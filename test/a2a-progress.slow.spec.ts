// A served agent's tool calls reach the parent over A2A: serve-a2a sends a step's calls in one `working` update
// (`metadata.cordisSubagents.update.tools`), and provider-a2a hands the parent one `tool-call` update for each.
import { expect } from 'chai'
import { Context } from 'cordis'
import { z } from 'zod'
import AgentRuntime, { type Agent, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import { createA2aProvider } from '@cordis-subagents/provider-a2a'
import A2aServer from '@cordis-subagents/serve-a2a'
import type { SubagentUpdate } from '@cordis-subagents/subagents-service'
import ToolRegistry from '@cordis-subagents/tools'

describe('a served agent\'s tool calls over A2A (serve-a2a → provider-a2a)', function () {
  this.timeout(30_000)

  it('a step that calls two tools: one working update on the wire, two tool-call updates for the parent, in order', async () => {
    const ctx = new Context()
    // A model that takes a moment, as a real one does: the step's calls go up before the next step ends.
    const model = new ScriptedModel(async (request: GenerateRequest) => {
      await new Promise((resolve) => setTimeout(resolve, 5))
      return request.messages.some((message) => message.role === 'tool')
        ? ScriptedModel.text('both done')
        : { toolCalls: [{ name: 'first', input: {} }, { name: 'second', input: {} }] }
    })
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, { model: 'served' })
    ctx.plugin({
      name: 'served-tools',
      inject: ['agents', 'tools'],
      apply(ctx: Context) {
        ctx.agents.registerModel('served', model)
        for (const name of ['first', 'second']) ctx.tools.register({ name, description: name, input: z.object({}), execute: async () => ({ content: `${name} ran` }) })
      },
    })
    ctx.plugin(A2aServer, {})
    await ctx.start()
    await ctx.lifecycle.flush()
    try {
      const remote = await createA2aProvider({ url: ctx.a2aServer.url, bearerToken: ctx.a2aServer.token })
      const updates: SubagentUpdate[] = []
      const parent = { id: 'parent', depth: 0, cwd: process.cwd() } as unknown as Agent
      const handle = await remote.start({
        prompt: 'call both', parent, signal: new AbortController().signal, runId: 'progress-1', depth: 1, maxDepthCeiling: 3,
        onUpdate: (update) => updates.push(update),
      })
      const result = await handle.result
      await handle.dispose()
      await remote.dispose()
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      expect(result.output).to.equal('both done')
      expect(updates.filter((update) => update.kind === 'tool-call')).to.deep.equal([
        { kind: 'tool-call', tool: 'first', step: 1 },
        { kind: 'tool-call', tool: 'second', step: 1 },
      ])
    } finally {
      await ctx.stop()
    }
  })
})
