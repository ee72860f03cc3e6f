// Issue 39, item 9: the tool ceiling provider-acp puts in its child's environment is for that child only. A real
// third-party-like ACP agent (test/fixtures/crossing-two-hops/third-party-agent.mjs) starts a real cordis-subagents-mcp
// with its whole environment, as Claude Code starts its MCP servers; the grandchild's delegated child keeps its tools.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { Context } from 'cordis'
import { z } from 'zod'
import AgentRuntime from '@cordis-subagents/agent'
import * as acp from '@cordis-subagents/provider-acp'
import SubagentService from '@cordis-subagents/subagents-service'
import ToolRegistry from '@cordis-subagents/tools'
import { ROOT } from './helpers.js'

const FIXTURES = join(ROOT, 'test/fixtures/crossing-two-hops')
const MCP_BIN = join(ROOT, 'packages/serve-mcp/src/bin.ts')

const GRANDCHILD_YML = `- id: tools
  name: '@cordis-subagents/tools'
- id: agents
  name: '@cordis-subagents/agent'
  config:
    model: hops
- id: parts
  name: ${JSON.stringify(join(FIXTURES, 'grandchild-parts.ts'))}
- id: subagents
  name: '@cordis-subagents/subagents-service'
- id: spawn
  name: '@cordis-subagents/provider-spawn'
- id: tool-subagent
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: spawn
- id: serve
  name: '@cordis-subagents/serve-mcp'
  config:
    transport: stdio
    tools: [subagent]
`

describe('issue 39: a tool ceiling meant for one hop is not applied two hops away', function () {
  this.timeout(120_000)
  let dir: string
  let ctx: Context

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'crossing-two-hops-'))
    writeFileSync(join(dir, 'cordis.yml'), GRANDCHILD_YML)
  })
  afterEach(async () => {
    await ctx?.stop()
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('the grandchild (cordis-subagents-mcp behind a third-party ACP agent) gives its delegated child its own tools', async () => {
    ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime)
    ctx.plugin(SubagentService)
    ctx.plugin(acp, {
      name: 'acp',
      command: process.execPath,
      args: [
        join(FIXTURES, 'third-party-agent.mjs'),
        '--import', 'tsx', '--conditions', 'cordis-subagents-source', '--no-experimental-require-module', MCP_BIN, join(dir, 'cordis.yml'),
      ],
      cwd: ROOT,
      startupTimeout: 60_000,
    } as acp.Config)
    await ctx.start()
    await ctx.lifecycle.flush()
    // The parent may use one tool the grandchild's app does not have: its child gets SUBAGENT_ALLOWED_TOOLS=host_only.
    ctx.tools.register({ name: 'host_only', description: 'Only the host has it.', input: z.object({}), execute: async () => ({ content: 'x' }) })
    const parent = ctx.agents.create({ tools: ctx.tools.view() })
    const run = await ctx.subagents.delegate('acp', { prompt: 'TOOLS?', parent, signal: new AbortController().signal })
    const result = await run.result
    await run.dispose()
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    // Before the fix the grandchild applied the host's list: its child had no tools ("tools: (none)") and said "ok".
    expect(result.output).to.match(/^ok: tools: (\S+,)?echo\b/)
    await parent.dispose()
  })
})
