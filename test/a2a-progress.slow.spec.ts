// A served agent's tool calls reach the parent over A2A: serve-a2a sends a step's calls in one `working` update
// (`metadata.cordisSubagents.update.tools`), and provider-a2a hands the parent one `tool-call` update for each.
import { expect } from 'chai'
import { type Agent, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import { createA2aProvider } from '@cordis-subagents/provider-a2a'
import type { SubagentUpdate } from '@cordis-subagents/subagents-service'
import { serve } from '../packages/serve-a2a/tests/helpers.js'

describe('a served agent\'s tool calls over A2A (serve-a2a → provider-a2a)', function () {
  this.timeout(30_000)

  it('a step that calls two tools: one working update on the wire, two tool-call updates for the parent, in order', async () => {
    // A model that takes a moment, as a real one does: the step's calls go up before the next step ends.
    const served = await serve({}, async (request: GenerateRequest) => {
      await new Promise((resolve) => setTimeout(resolve, 5))
      return request.messages.some((message) => message.role === 'tool')
        ? ScriptedModel.text('both done')
        : { toolCalls: [{ name: 'echo', input: { text: 'a' } }, { name: 'secret', input: {} }] }
    })
    try {
      const remote = await createA2aProvider({ url: served.server.url, bearerToken: served.server.token })
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
        { kind: 'tool-call', tool: 'echo', step: 1 },
        { kind: 'tool-call', tool: 'secret', step: 1 },
      ])
      expect(served.secretCalls).to.have.length(1)
    } finally {
      await served.ctx.stop()
    }
  })
})
