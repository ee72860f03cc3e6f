// The MCP client plugin (one load per server); `./serve` and `./servers` are the other entries.
export { name, reusable, inject, apply } from './plugin.js'
export { Config } from './config.js'
export { McpError, type McpErrorCode } from './errors.js'
export type { EnvInherit } from './env.js'
export type { McpLaunch, McpServerEntry, McpServers } from './servers.js'
