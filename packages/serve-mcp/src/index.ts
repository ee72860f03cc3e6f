// The MCP server: delegation tools of ctx.tools served to MCP clients (stdio, with the `cordis-subagents-mcp` bin, or Streamable HTTP).
export { McpServe, McpServe as default } from './service.js'
export { Config } from './config.js'
export { ServeMcpError, type ServeMcpErrorCode } from './errors.js'
