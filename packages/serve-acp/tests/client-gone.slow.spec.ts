// serve-acp on a transport of the host's own (not the stdio bin): a client that goes away (its stream ends, or errors)
// while a turn runs. The turn stops (its model call aborted), the session's agent is disposed and its slot freed, as
// when the app stops: nothing of a client that left runs on. The stdio bin stops the whole app at that moment anyway.
import { expect } from 'chai'
import { Context } from 'cordis'
import * as sdk from '@agentclientprotocol/sdk'
import AgentRuntime, { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import { eventually } from '@cordis-subagents/test-support'
import * as ServeAcp from '../src/index.js'

for (const how of ['ends', 'errors'] as const) {
  describe(`serve-acp: a client whose stream ${how} mid-turn`, function () {
    this.timeout(30_000)
    it('aborts the turn and disposes the session; the app runs on', async () => {
      const ctx = new Context()
      const calls: GenerateRequest[] = []
      // The model waits until its call is aborted: a turn that would run for ever.
      const model = new ScriptedModel((request) => new Promise((_resolve, reject) => {
        calls.push(request)
        request.signal.addEventListener('abort', () => reject(request.signal.reason))
      }))
      ctx.plugin(ToolRegistry)
      ctx.plugin(AgentRuntime, { model: 'scripted' })
      const agents: { disposed: boolean }[] = []
      ctx.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => {
        c.agents.registerModel('scripted', model)
        c.agents.observe({ runStart: (agent) => void agents.push(agent) })
      } })
      await ctx.start()
      const toClient = new TransformStream<Uint8Array, Uint8Array>()
      let input!: ReadableStreamDefaultController<Uint8Array>
      const fromClient = new TransformStream<Uint8Array, Uint8Array>()
      const toServer = new ReadableStream<Uint8Array>({ start: (controller) => { input = controller } })
      void (async () => {
        const reader = fromClient.readable.getReader()
        for (;;) {
          const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }))
          if (done) return
          try { input.enqueue(value!) } catch { return }
        }
      })()
      const closed: unknown[] = []
      ctx.on('serve-acp/closed' as never, (() => void closed.push(how)) as never)
      ctx.plugin(ServeAcp, { transport: { input: toServer, output: toClient.writable }, loadSession: false } as never)
      await ctx.lifecycle.flush()
      try {
        const connection = sdk.client({ name: 'spec' }).connect(sdk.ndJsonStream(fromClient.writable, toClient.readable))
        await connection.agent.request(sdk.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} })
        const { sessionId } = await connection.agent.request(sdk.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] })
        void connection.agent.request(sdk.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'work' }] }).catch(() => {})
        const call = await eventually(() => calls[0], 'the turn called its model')
        // The client goes away.
        if (how === 'ends') input.close()
        else input.error(new Error('the client went away'))
        await eventually(() => call.signal.aborted, 'the turn\'s model call aborted')
        expect(agents).to.have.length(1)
        await eventually(() => agents[0]!.disposed, 'the session\'s agent disposed')
        expect(closed).to.deep.equal([how])
        expect(ctx.lifecycle.isActive).to.equal(true)
      } finally {
        await ctx.stop()
      }
    })
  })
}
