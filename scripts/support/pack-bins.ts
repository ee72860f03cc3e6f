// The smallest invocation that proves each bin of ours starts: from an installed package
// (scripts/pack-check.ts) and linked in the workspace (test/package-bins.slow.spec.ts). A bin not listed
// here fails both: add its invocation when you add a bin.

export interface BinInvocation {
  /** Files written into the project first (name → content). */
  files?: Record<string, string>
  /** Arguments; `{project}` is replaced by the project's absolute path. */
  args: string[]
  /** Written to stdin, which is closed once the output matched `expect` (a server told to stop). */
  input?: string
  /** The exit code and what stdout or stderr must show. */
  code: number
  expect: RegExp
}

/** An MCP app that serves nothing but the protocol (no `subagent` tool is registered): enough to answer `initialize`. */
const MCP_CONFIG = `- id: tools
  name: '@cordis-subagents/tools'
- id: agents
  name: '@cordis-subagents/agent'
- id: serve
  name: '@cordis-subagents/serve-mcp'
  config:
    transport: stdio
    tools: [subagent]
`

const MCP_INITIALIZE = `${JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pack-check', version: '0.0.0' } },
})}\n`

export const BIN_INVOCATIONS: Record<string, BinInvocation> = {
  'cordis-subagents-acp': { args: ['--help'], code: 0, expect: /usage: cordis-subagents-acp/ },
  'cordis-subagents-quickstart': { args: ['--help'], code: 0, expect: /usage: npm start/ },
  'cordis-subagents-mcp': {
    files: { 'cordis.yml': MCP_CONFIG },
    args: ['{project}/cordis.yml'],
    input: MCP_INITIALIZE,
    code: 0,
    expect: /"serverInfo"/,
  },
}
