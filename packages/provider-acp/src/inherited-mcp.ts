import type * as Acp from '@agentclientprotocol/sdk'
import type { Context } from 'cordis'

/**
 * What `ctx.mcp` (from `@cordis-subagents/mcp/servers`) lists, read structurally: provider-acp
 * does not depend on the mcp package.
 */
interface MountedServer {
  name: string
  launch: Acp.McpServer
  tools(): string[]
  filtered: boolean
}

interface ParentWithTools {
  tools?: { has(name: string): boolean }
}

/** The most MCP servers passed on by `inheritMcpServers`. */
const MAX_INHERITED_MCP_SERVERS = 32

/**
 * `inheritMcpServers: true`: the MCP servers mounted in this app whose every tool the parent's view
 * allows. A server the parent sees only partly (a tool filter, a deny) is not passed: the ACP
 * child would get all of its tools. A load with its own allow/deny is never passed, for the same
 * reason. Names already in `mcpServers` keep the configured entry.
 */
export function inheritedMcpServers(ctx: Context): (parent: unknown, configured: readonly Acp.McpServer[]) => Acp.McpServer[] {
  return (parent, configured) => {
    const registry = ctx.get('mcp') as { list?: () => MountedServer[] } | undefined
    const view = (parent as ParentWithTools | undefined)?.tools
    if (typeof registry?.list !== 'function' || typeof view?.has !== 'function') return []
    const taken = new Set(configured.map((server) => server.name))
    const passed: Acp.McpServer[] = []
    for (const server of registry.list()) {
      if (passed.length >= MAX_INHERITED_MCP_SERVERS) break
      if (server.filtered || taken.has(server.name)) continue
      const tools = server.tools()
      if (tools.length && tools.every((name) => view.has(name))) passed.push(server.launch)
    }
    return passed
  }
}
