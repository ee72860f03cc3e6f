import type { Logger } from 'cordis'
import type { SentServerFailure, SentServers } from '@cordis-subagents/mcp'
import type { Session } from './sessions.js'

/** serve-acp's `mcpServers` config: what a client's MCP servers (ACP `session/new`'s `mcpServers`) may do. */
export interface ClientMcpConfig {
  /** Start a client's stdio servers (a command on this host). */
  stdio: boolean
  /** Connect to a client's Streamable HTTP servers. */
  http: boolean
  /** Servers one session may send. */
  maxServers: number
  /** The only commands a stdio server may run (exactly as sent); unset: any. */
  commands?: string[]
  /** Which host variables a stdio server inherits (as `@cordis-subagents/mcp`'s `inherit`). */
  inherit: 'core' | 'all' | 'none'
  startupTimeout: number
  callTimeout: number
}

export const DEFAULT_CLIENT_MCP: ClientMcpConfig = { stdio: true, http: true, maxServers: 8, inherit: 'core', startupTimeout: 30_000, callTimeout: 120_000 }

/** A request's `mcpServers`: refused as a whole (nothing started), or ready to `start` (undefined: none sent). */
type Checked = { refusal: string } | { start(): Promise<SentServers | undefined> }

/**
 * Checks the MCP servers an ACP client sent with `session/new` (or `session/load` / `session/resume`)
 * against the policy of `config`, starting nothing: the list is refused as a whole when the policy forbids
 * an entry. `start()` then starts them through `@cordis-subagents/mcp` (imported only when a client sends
 * some), with the bounds and env policy of a configured MCP server; one that does not start is left out (see `failuresMeta`).
 */
export async function checkClientMcp(sent: unknown, config: ClientMcpConfig, cwd: string, logger: Logger): Promise<Checked> {
  if (sent === undefined || sent === null || (Array.isArray(sent) && sent.length === 0)) return { start: async () => undefined }
  const mcp = await import('@cordis-subagents/mcp')
  const policy = {
    ...mcp.DEFAULT_SENT_SERVER_POLICY,
    stdio: config.stdio, http: config.http, maxServers: config.maxServers, inherit: config.inherit,
    startupTimeout: config.startupTimeout, callTimeout: config.callTimeout,
    ...config.commands ? { commands: config.commands } : {},
  }
  const refusal = mcp.sentServersRefusal(sent, policy)
  if (refusal) return { refusal }
  return { start: () => mcp.startSentServers(sent as Parameters<typeof mcp.startSentServers>[0], policy, cwd, logger) }
}

type FailuresMeta = { _meta?: { cordisSubagents: { mcpServerFailures: readonly SentServerFailure[] } } }

/** The `_meta` of a `session/new` (load, resume) response that names the client's MCP servers that did not start. */
export function failuresMeta(servers: SentServers | undefined): FailuresMeta {
  return servers?.failed.length ? { _meta: { cordisSubagents: { mcpServerFailures: servers.failed } } } : {}
}

/** `open()`, stopping the MCP servers its client sent when it is refused. */
export async function opened(open: () => Session, mcp: SentServers | undefined): Promise<Session> {
  try {
    return open()
  } catch (error) {
    await mcp?.close()
    throw error
  }
}
