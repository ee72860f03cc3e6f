import { type Context, Service } from 'cordis'
import { McpError } from './errors.js'

/**
 * How a mounted MCP server is launched, in the form ACP's `session/new` takes, so a provider can
 * hand the same server to an ACP child (provider-acp `inheritMcpServers`). Structural: provider-acp
 * reads `ctx.get('mcp')` without importing this package.
 */
export type McpLaunch =
  | { name: string; command: string; args: string[]; env: { name: string; value: string }[] }
  | { type: 'http'; name: string; url: string; headers: { name: string; value: string }[] }

export interface McpServerEntry {
  /** The load's server name (its tools are `name__tool`). */
  readonly name: string
  readonly launch: McpLaunch
  /** Our names of the tools mounted now. */
  tools(): string[]
  /** True when the load filters the server's tools (allow/deny): an ACP child would get them unfiltered. */
  readonly filtered: boolean
}

declare module 'cordis' {
  interface Context {
    mcp: McpServers
  }
}

/**
 * `ctx.mcp`: the MCP servers mounted by `@cordis-subagents/mcp` loads. Each load adds its entry in
 * its own scope (gone on unload).
 */
export class McpServers extends Service {
  private readonly entries = new Map<string, McpServerEntry>()

  constructor(ctx: Context) {
    super(ctx, 'mcp', true)
  }

  /**
   * Adds a server in the caller's scope. A name another load's entry holds is refused (`MCP_DUPLICATE_NAME`), never
   * replaced: the client loads claim their names at load, so only a caller outside them meets this.
   */
  add(entry: McpServerEntry): () => void {
    return this.ctx.effect(() => {
      const other = this.entries.get(entry.name)
      if (other && other !== entry) {
        throw new McpError('MCP_DUPLICATE_NAME', `mcp: the server name "${entry.name}" is in ctx.mcp already, added by another load; `
          + 'give each MCP server load its own name.')
      }
      this.entries.set(entry.name, entry)
      return () => {
        if (this.entries.get(entry.name) === entry) this.entries.delete(entry.name)
      }
    })
  }

  list(): McpServerEntry[] {
    return [...this.entries.values()]
  }
}
export default McpServers
