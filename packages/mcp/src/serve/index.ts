// The old entry of the MCP server, kept for one release: it moved to @cordis-subagents/serve-mcp.
export { Config, McpServe, default } from '@cordis-subagents/serve-mcp'
