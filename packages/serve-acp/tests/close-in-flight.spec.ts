/// <reference types="mocha" />
// serve-acp on a transport of the host's own, unloaded (or its app stopped) while a session/prompt runs: the turn is
// aborted, its prompt is answered `cancelled` and only then is the stream closed, so the client sees its answer and
// the end of the stream. A client that reads no more does not hold the close past `closeGrace`: once it reads again it
// gets its answer, then the end. Before, the answer was never written and the output was never closed: the client's
// prompt stayed pending and its connection open until it sent something more.
import { expect } from 'chai'
import { Context, type ForkScope } from 'cordis'
import * as sdk from '@agentclientprotocol/sdk'
import AgentRuntime, { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import { eventually } from '@cordis-subagents/test-support'
import * as ServeAcp from '../src/index.js'
import { exitHolds } from '../src/stdio.js'

type Settled = { answer?: unknown; error?: unknown }

describe('serve-acp: unloaded while a prompt runs', function () {
  this.timeout(20_000)
  let ctx: Context
  let stopped: boolean
  let calls: GenerateRequest[]

  /**
   * A served app whose model waits for its call's abort; the client connected and initialized, a prompt running. While
   * `reading.paused` is set, the client takes none of the server's output (its writes wait) until `reading.resume()`.
   */
  async function serve(config: Record<string, unknown> = {}) {
    ctx = new Context()
    stopped = false
    calls = []
    const model = new ScriptedModel((request) => new Promise((_resolve, reject) => {
      calls.push(request)
      request.signal.addEventListener('abort', () => reject(request.signal.reason))
    }))
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, { model: 'scripted' })
    ctx.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('scripted', model) } })
    await ctx.start()
    const toServer = new TransformStream<Uint8Array, Uint8Array>()
    let toClient!: ReadableStreamDefaultController<Uint8Array>
    const reading = { paused: false, resume: () => {} }
    const resumed = new Promise<void>((resolve) => { reading.resume = resolve })
    const output = new WritableStream<Uint8Array>({
      write: async (chunk) => {
        if (reading.paused) await resumed
        toClient.enqueue(chunk)
      },
      close: () => toClient.close(),
      abort: (reason) => toClient.error(reason),
    })
    const served = { transport: { input: toServer.readable, output }, loadSession: false, ...config }
    const fork: ForkScope = ctx.plugin(ServeAcp, served as never)
    await ctx.lifecycle.flush()
    const fromServer = new ReadableStream<Uint8Array>({ start: (controller) => { toClient = controller } })
    const connection = sdk.client({ name: 'spec' }).connect(sdk.ndJsonStream(toServer.writable, fromServer))
    let ended = false
    void connection.closed.then(() => { ended = true })
    await connection.agent.request(sdk.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} })
    const { sessionId } = await connection.agent.request(sdk.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] })
    const settled: Settled = {}
    const prompt = { sessionId, prompt: [{ type: 'text' as const, text: 'work' }] }
    void connection.agent.request(sdk.methods.agent.session.prompt, prompt)
      .then((answer) => { settled.answer = answer }, (error: unknown) => { settled.error = error })
    await eventually(() => calls[0], 'the turn called its model')
    return { fork, settled, reading, ended: () => ended }
  }

  afterEach(async () => {
    if (!stopped) await ctx.stop()
  })

  for (const how of ['unload', 'ctx.stop()'] as const) {
    it(`${how}: the prompt is answered cancelled, then the client's stream ends`, async () => {
      const { fork, settled, ended } = await serve()
      if (how === 'unload') fork.dispose()
      else {
        stopped = true
        await ctx.stop()
      }
      await eventually(() => 'answer' in settled || 'error' in settled, 'the client\'s prompt is answered', 5_000)
      expect(settled.error, 'the prompt failed').to.equal(undefined)
      expect(settled.answer).to.include({ stopReason: 'cancelled' })
      await eventually(ended, 'the client sees the end of the stream', 5_000)
      expect(calls[0]!.signal.aborted).to.equal(true)
    })
  }

  it('a client that reads no more holds the close only until closeGrace; reading again, it gets its answer and the end', async () => {
    const { fork, settled, reading, ended } = await serve({ closeGrace: 300 })
    reading.paused = true
    const start = performance.now()
    fork.dispose()
    await exitHolds()
    const took = performance.now() - start
    expect(took, 'the close did not wait for the client to read its answer').to.be.at.least(250)
    expect(took, 'the close waited past closeGrace').to.be.below(5_000)
    expect(settled).to.deep.equal({})
    reading.resume()
    await eventually(() => settled.answer, 'the client\'s prompt is answered once it reads', 5_000)
    expect(settled.answer).to.include({ stopReason: 'cancelled' })
    await eventually(ended, 'the client sees the end of the stream', 5_000)
  })
})
