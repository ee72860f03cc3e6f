// Issue 39 item 14: a child elsewhere reports 2^53 - 1 of everything (tokens, model calls, tool
// calls, delegations) through every door a report comes in by: an ACP agent (a real subprocess:
// usage_update _meta.cordisSubagents and _meta.usage, PromptResponse.usage) and an A2A server on
// 127.0.0.1 (metadata.cordisSubagents of its status updates), after malformed reports. The
// parent's tree charges each report capped at MAX_REPORTED_COUNT, every sum stays a safe integer,
// and a budget stop names the clamped report instead of "18014398509481982 spent".
import { join } from 'node:path'
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { type Agent } from '@cordis-subagents/agent'
import SubagentService, { type SubagentResult } from '@cordis-subagents/subagents-service'
import * as acp from '@cordis-subagents/provider-acp'
import * as a2a from '@cordis-subagents/provider-a2a'
import { MAX_REPORTED_COUNT } from '@cordis-subagents/shared'
import { startScriptedServer, type ScriptedServer } from '../packages/provider-a2a/tests/fixtures/scripted-server.js'
import { ROOT } from './helpers.js'

const AGENT = join(ROOT, 'test/fixtures/hostile-spend/acp-agent.mjs')
const HUGE = String(Number.MAX_SAFE_INTEGER)
const DOUBLED = String(2 * Number.MAX_SAFE_INTEGER)

describe('spend reports from outside are capped per report and summed as safe integers (issue 39, item 14)', function () {
  this.timeout(60_000)
  let server: ScriptedServer
  let ctx: Context | undefined

  beforeEach(async () => {
    server = await startScriptedServer({ streaming: true })
  })

  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
    await server.close()
  })

  async function host(acpArgs: string[] = [], service = {}): Promise<Context> {
    const root = new Context()
    root.plugin(ToolRegistry)
    root.plugin(AgentRuntime, {})
    root.plugin(SubagentService, service)
    root.plugin(acp, { name: 'acp', command: process.execPath, args: [AGENT, ...acpArgs] } as acp.Config)
    root.plugin(a2a, { name: 'remote', url: server.url } as a2a.Config)
    await root.start()
    await root.lifecycle.flush()
    await root.subagents.ready('remote', { timeout: 30_000 })
    return root
  }

  async function delegate(root: Context, provider: string, parent: Agent, prompt: string): Promise<SubagentResult> {
    const run = await root.subagents.delegate(provider, { prompt, parent, signal: new AbortController().signal })
    const result = await run.result
    await run.dispose()
    return result
  }

  function expectSafe(parent: Agent, most: number) {
    for (const [name, spent] of Object.entries(parent.budget.spent)) {
      expect(Number.isSafeInteger(spent), `${name}: ${spent}`).to.equal(true)
      expect(spent, name).to.be.at.most(most)
    }
  }

  for (const [provider, prompt] of [['acp', 'spend'], ['remote', 'spend-max']] as const) {
    it(`${provider}: a report of 2^53 - 1 tokens stops the tree's budget as one clamped report, with a sane message`, async () => {
      ctx = await host()
      const parent = ctx.agents.create({ budget: { maxTokens: 1000 } })
      const result = await delegate(ctx, provider, parent, prompt)
      expect(result.stopReason, result.diagnostic).to.equal('budget')
      expect(parent.budget.spent.tokens).to.equal(MAX_REPORTED_COUNT)
      expectSafe(parent, MAX_REPORTED_COUNT + 1) // the delegation itself is one more
      expect(result.diagnostic).to.include(`the tokens budget (1000 tokens; ${MAX_REPORTED_COUNT} spent`)
      expect(result.diagnostic).to.match(/clamped/)
      expect(result.diagnostic).to.not.include(HUGE).and.not.include(DOUBLED)
      await parent.dispose()
    })
  }

  it('without a limit, reports of 2^53 - 1 from both doors, twice each, add up to safe integers', async () => {
    // The deployment's ceiling of 16 delegations per tree would refuse the second start (each reports 2^53 - 1).
    ctx = await host(['end'], { maxChildren: Number.MAX_SAFE_INTEGER })
    const parent = ctx.agents.create({})
    const results = []
    for (let i = 0; i < 2; i++) {
      results.push(await delegate(ctx, 'acp', parent, 'spend'), await delegate(ctx, 'remote', parent, 'spend-max end'))
    }
    for (const result of results) {
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      for (const [key, value] of Object.entries(result.usage ?? {})) expect(value, key).to.be.at.most(MAX_REPORTED_COUNT)
    }
    // Four runs, each charged at most the per-report maximum of each count.
    expect(parent.budget.spent.tokens).to.equal(4 * MAX_REPORTED_COUNT)
    expect(parent.budget.spent.steps).to.equal(4 * MAX_REPORTED_COUNT)
    expectSafe(parent, 4 * MAX_REPORTED_COUNT + 4)
    await parent.dispose()
  })
})
