// The ACP agent the quick start ships (acp-agent.yml served by serve-acp's bin), driven by the real
// provider-acp: answers from real tool output, continues the depth count, honours cancel, applies
// the parent's tool ceiling across the process boundary, reports usage in ACP's field names.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { ROOT_PROMPT } from '@cordis-subagents/quickstart/demo-model'
import { alive, buildQuickstart, eventually } from './helpers.js'
import { startQuickstartAcpHost } from './support/quickstart-acp-host.js'

describe('quick start ACP agent (acp-agent.yml through serve-acp, over provider-acp)', function () {
  this.timeout(30_000)
  let ctx: Context

  before(() => buildQuickstart())

  async function boot(options: { depth?: number; delay?: string; env?: Record<string, string> } = {}) {
    ctx = await startQuickstartAcpHost({
      agents: { depth: options.depth ?? 0 },
      acp: { env: { ...options.delay ? { QUICKSTART_DEMO_DELAY: options.delay } : {}, ...options.env } },
    })
  }

  afterEach(async () => {
    await ctx?.stop()
  })

  it('answers from the workspace at the next depth (SUBAGENT_DEPTH) and reports usage', async () => {
    await boot({ depth: 2 })
    const parent = ctx.agents.create()
    const updates: string[] = []
    const run = await ctx.subagents.delegate('acp', {
      prompt: `${ROOT_PROMPT} and report its workspaces and npm scripts.`,
      parent,
      signal: new AbortController().signal,
      onUpdate: (update) => updates.push(`${update.kind}:${update.tool ?? ''}`),
    })
    const result = await run.result
    await run.dispose()
    await parent.dispose()
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    expect(result.output).to.match(/^cordis-subagents: workspaces [^;]*packages\/\*[^;]*; npm scripts [^\n]*start[^\n]*\(answered at depth 3, pid \d+\)$/)
    expect(updates.some((u) => u.startsWith('tool-call'))).to.equal(true)
    expect(result.usage?.inputTokens).to.be.greaterThan(0)
    expect(updates).to.include('usage:')
  })

  it('the child gets no more tools than its parent: a parent without read_file gets an answer without it', async () => {
    await boot()
    const parent = ctx.agents.create({ tools: ctx.tools.view().restrict({ deny: ['read_file'] }) })
    const run = await ctx.subagents.delegate('acp', { prompt: `${ROOT_PROMPT}.`, parent, signal: new AbortController().signal })
    const result = await run.result
    await run.dispose()
    await parent.dispose()
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    // The demo model calls read_file anyway; the child's registry reports it like an unknown tool.
    expect(result.output).to.match(/^Could not read the root package\.json: .*read_file/)
  })

  it('session/cancel aborts the child\'s turn and the process is reaped', async () => {
    await boot({ delay: '3000' })
    const parent = ctx.agents.create()
    const run = await ctx.subagents.delegate('acp', { prompt: `${ROOT_PROMPT}.`, parent, signal: new AbortController().signal })
    const pid = Number(/session-(\d+)-/.exec(run.info.childId ?? '')?.[1])
    expect(alive(pid), `child ${run.info.childId}`).to.equal(true)
    run.cancel('test cancels')
    const result = await run.result
    await run.dispose()
    await parent.dispose()
    expect(result.stopReason).to.equal('aborted')
    expect(await eventually(() => !alive(pid))).to.equal(true)
  })

  it('a failed child turn reaches the parent as an error result with the child\'s diagnostic', async () => {
    // An OpenAI-compatible endpoint that rejects every request with 401.
    const server: Server = createServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      await boot({ env: { OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`, OPENAI_API_KEY: 'sk-test-not-a-key' } })
      const parent = ctx.agents.create()
      const run = await ctx.subagents.delegate('acp', { prompt: 'Say hello.', parent, signal: new AbortController().signal })
      const result = await run.result
      await run.dispose()
      await parent.dispose()
      expect(result.stopReason, result.diagnostic).to.equal('error')
      expect(result.diagnostic).to.match(/^The agent answered session\/prompt with an error: Internal error: [^\n]*401/)
      expect(result.output).to.not.include('[agent error]')
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
