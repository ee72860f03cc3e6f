// Issue 30 with the real Claude Code ACP adapter (@zed-industries/claude-agent-acp) against the
// loopback fake Messages API: Claude asks permission (session/request_permission) before an MCP tool
// call; with provider-acp's `permission: escalate` the run parks with that request as its question,
// and the answer "allow" lets the MCP tool run and the answer come back.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { serverBin } from '../packages/mcp/tests/helpers.js'
import type { ModelRequest, Reply } from './support/fake-model-server.js'
import { useRealAgent } from './support/real-agent-hooks.js'

const FILESYSTEM = serverBin('@modelcontextprotocol/server-filesystem')

describe('real claude ACP adapter: a permission request escalated (permission: escalate) and answered', function () {
  this.timeout(120_000)
  const real = useRealAgent()

  it('parks on Claude\'s permission request before the MCP call; resume "allow" runs the tool and the file\'s content comes back', async () => {
    let dir = ''
    const script = (request: ModelRequest): Reply => {
      if (!request.tools.length) return { text: 'side request' }
      const [result] = request.toolResults
      if (result === undefined) {
        const tool = request.tools.find((name) => name.includes('notes') && name.endsWith('read_text_file'))
        if (!tool) return { text: `NO TOOL notes: ${request.tools.join(',')}` }
        return { tool, input: { path: join(dir, 'plan.txt') } }
      }
      return { text: `the plan says: ${result}` }
    }
    const agent = await real.agent('claude', script)
    // Under the session cwd: Claude Code offers its MCP servers the cwd as their roots.
    dir = mkdirSync(join(agent.home, 'notes'), { recursive: true })!
    writeFileSync(join(dir, 'plan.txt'), 'ship on friday 5d1e')
    const host = await real.app({
      provider: [
        'permission: escalate',
        'mcpServers:',
        `  - { name: notes, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(FILESYSTEM)}, ${JSON.stringify(dir)}] }`,
      ],
    })
    const { ctx } = host.app
    const owner = ctx.agents.create()
    const handle = await ctx.subagents.delegate('acp', { prompt: 'Read plan.txt and tell me what it says.', parent: owner, signal: new AbortController().signal })
    try {
      const first = await handle.result
      expect(first.stopReason, first.diagnostic).to.equal('pending')
      const question = first.question!
      expect(question.kind).to.equal('permission')
      expect(question.text).to.match(/^The agent asks permission for a tool call: .*read_text_file/)
      expect(question.options!.length, JSON.stringify(question.options)).to.be.greaterThan(1)
      // The MCP tool has not run: the model has not seen a tool result yet.
      expect(agent.model.requests.filter((request) => request.toolResults.length)).to.deep.equal([])
      expect(handle.state).to.equal('parked')

      const final = await handle.resume('allow')
      expect(final.stopReason, final.diagnostic).to.equal('completed')
      expect(final.output).to.include('the plan says:').and.include('ship on friday 5d1e')
      const answered = agent.model.requests.filter((request) => request.tools.length && request.toolResults.length)
      expect(answered.length).to.be.greaterThan(0)
      expect(answered[0]!.toolResults[0]).to.include('ship on friday 5d1e')
    } finally {
      await handle.dispose()
      await owner.dispose()
    }
  })
})
