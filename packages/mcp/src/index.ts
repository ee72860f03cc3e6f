// The MCP client plugin (one load per server); `./serve` and `./servers` are the other entries.
export { name, reusable, inject, apply } from './plugin.js'
export { Config } from './config.js'
export { McpError, type McpErrorCode } from './errors.js'
export {
  DEFAULT_SENT_SERVER_POLICY, sentServersRefusal, startSentServers,
  type SentMcpServer, type SentServerFailure, type SentServerPolicy, type SentServers,
} from './client-servers.js'
