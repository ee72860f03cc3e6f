// Issue 29 item 2: MCP servers reach ACP children. provider-acp passes its own `mcpServers` and, with
// `inheritMcpServers`, the app's mounted servers the parent may fully use, in session/new; the real
// adapter starts them and its model (the loopback fake) calls their tools.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { serverBin } from '../packages/mcp/tests/helpers.js'
import type { ModelRequest, Reply } from './support/fake-model-server.js'
import type { AdapterName } from './support/real-agents.js'
import { useRealAgent } from './support/real-agent-hooks.js'
import { reaped } from './support/processes-by-env.js'
import { eventually } from './helpers.js'

const ADAPTERS: AdapterName[] = ['codex', 'claude']
const FILESYSTEM = serverBin('@modelcontextprotocol/server-filesystem')

/**
 * The tool `server`'s `read_text_file` as the fake lists it: `mcp__files__read_text_file` is Claude Code's name,
 * and the fake flattens Codex's namespace tool `mcp__files` (holding `read_text_file`) to the same.
 */
function readTool(request: ModelRequest, server: string): string | undefined {
  return request.tools.find((tool) => tool.includes(server) && tool.endsWith('read_text_file'))
}

for (const name of ADAPTERS) {
  describe(`real ${name} ACP adapter: MCP servers from provider-acp reach the child and their tools run`, function () {
    this.timeout(120_000)
    const real = useRealAgent()

    it('the configured (mcpServers) and the inherited (inheritMcpServers) filesystem servers are called; their file contents reach the model and the answer', async () => {
      let shared = ''
      let own = ''
      const script = (request: ModelRequest): Reply => {
        if (!request.tools.length) return { text: 'side request' }
        const [first, second] = request.toolResults
        if (first === undefined) {
          const tool = readTool(request, 'files')
          if (!tool) return { text: `NO TOOL files: ${request.tools.join(',')}` }
          return { tool, input: { path: join(shared, 'inherited.txt') } }
        }
        if (second === undefined) {
          const tool = readTool(request, 'notes')
          if (!tool) return { text: `NO TOOL notes: ${request.tools.join(',')}` }
          return { tool, input: { path: join(own, 'configured.txt') } }
        }
        return { text: `read: ${first} | ${second}` }
      }
      const agent = await real.agent(name, script)
      // Under the session cwd (the adapter's home here): Claude Code offers its MCP servers the session
      // cwd as their roots, and server-filesystem then serves the roots instead of its argument.
      shared = mkdirSync(join(agent.home, 'shared'), { recursive: true })!
      own = mkdirSync(join(agent.home, 'own'), { recursive: true })!
      writeFileSync(join(shared, 'inherited.txt'), `inherited server content ${name} 7f3a`)
      writeFileSync(join(own, 'configured.txt'), `configured server content ${name} 91c2`)
      const host = await real.app({
        before: [
          '- id: servers',
          '  name: \'@cordis-subagents/mcp/servers\'',
          '- id: files',
          '  name: \'@cordis-subagents/mcp\'',
          '  config:',
          '    name: files',
          `    command: ${JSON.stringify(process.execPath)}`,
          `    args: [${JSON.stringify(FILESYSTEM)}, ${JSON.stringify(shared)}]`,
        ],
        provider: [
          // Claude Code asks before each MCP tool call; with `reject` its model gets "User refused permission".
          'permission: allow',
          'inheritMcpServers: true',
          'mcpServers:',
          `  - { name: notes, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(FILESYSTEM)}, ${JSON.stringify(own)}] }`,
        ],
      })
      expect(await eventually(() => host.app.ctx.tools.has('files__read_text_file'), 30_000), 'files mounted in the app').to.equal(true)
      const result = await host.delegate('Read both files and quote them.')
      const main = agent.model.requests.filter((request) => request.tools.length)
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      expect(main.map((request) => request.toolResults.length), `tools offered: ${main[0]?.tools.join(',')}`).to.deep.equal([0, 1, 2])
      expect(main[1]!.toolResults[0]).to.include(`inherited server content ${name} 7f3a`)
      expect(main[2]!.toolResults[1]).to.include(`configured server content ${name} 91c2`)
      expect(result.text).to.include(`inherited server content ${name} 7f3a`).and.include(`configured server content ${name} 91c2`)
      expect(result.text).to.match(/^read: /)
      await host.stop()
      expect(await reaped('HOME', agent.home), 'adapter and MCP server processes left after ctx.stop()').to.deep.equal([])
    })
  })
}
