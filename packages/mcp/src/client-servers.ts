import type { Logger } from 'cordis'
import type { Tool } from '@cordis-subagents/tools'
import { describeError, headChars, peerLine, Redactor } from '@cordis-subagents/shared'
import { Connection, type Endpoint } from './connection.js'
import { type EnvInherit, secretsOf, serverEnv } from './env.js'
import { McpError } from './errors.js'
import { mcpTool } from './mount.js'
import { mountedName } from './names.js'

/**
 * An MCP server as an ACP client sends it in `session/new` (`mcpServers`, ACP v1): stdio
 * (`command`, `args`, `env` as name/value pairs), `type: 'http'` (`url`, `headers`) or `type: 'sse'`.
 */
export type SentMcpServer =
  | { name: string; command: string; args?: string[]; env?: { name: string; value: string }[] }
  | { type: 'http' | 'sse'; name: string; url: string; headers?: { name: string; value: string }[] }

/** What a host lets a client's MCP servers do; the defaults are a configured `@cordis-subagents/mcp` load's. */
export interface SentServerPolicy {
  /** Start stdio servers (a command on this host). */
  stdio: boolean
  /** Connect to Streamable HTTP servers. */
  http: boolean
  /** Servers one request may send. */
  maxServers: number
  /** The commands a stdio server may run (exactly as sent, e.g. `npx`, `/usr/bin/node`); unset: any. */
  commands?: readonly string[]
  inherit: EnvInherit
  envExclude: readonly string[]
  startupTimeout: number
  callTimeout: number
  killGrace: number
  maxTools: number
  maxMessageBytes: number
  bounds: { maxParts: number; maxPartChars: number; maxImages: number; maxImageBytes: number }
}

export const DEFAULT_SENT_SERVER_POLICY: SentServerPolicy = {
  stdio: true, http: true, maxServers: 8, inherit: 'core', envExclude: [],
  startupTimeout: 30_000, callTimeout: 120_000, killGrace: 2_000, maxTools: 128, maxMessageBytes: 8 * 1024 * 1024,
  bounds: { maxParts: 16, maxPartChars: 16 * 1024, maxImages: 4, maxImageBytes: 1024 * 1024 },
}

/** A server that did not start (the others still serve): its name and why. */
export interface SentServerFailure {
  name: string
  code: 'MCP_CONNECT_FAILED'
  message: string
}

/** The tools of a request's MCP servers, for one agent's own view; `close()` stops every one of them (stdio processes reaped). */
export interface SentServers {
  readonly tools: readonly Tool[]
  readonly failed: readonly SentServerFailure[]
  /** The pids of the stdio servers running now. */
  pids(): number[]
  close(): Promise<void>
}

/** Our prefix for a sent server's tools: its name with characters outside A-Z a-z 0-9 - made `-`, at most 32. */
function prefixOf(name: string): string {
  return name.replace(/[^A-Za-z0-9-]/g, '-').slice(0, 32) || 'mcp'
}

/**
 * Why the sent list is refused as a whole (`MCP_SERVER_REFUSED` …), or undefined. Checked before
 * anything starts: too many servers, a transport the policy turns off (SSE always: deprecated, and our
 * client speaks Streamable HTTP), a command not allowed, a malformed entry, or two names that make one prefix.
 */
export function sentServersRefusal(servers: unknown, policy: SentServerPolicy): string | undefined {
  if (servers === undefined) return undefined
  if (!Array.isArray(servers)) return 'mcpServers must be an array'
  if (servers.length > policy.maxServers) return `${servers.length} MCP servers were sent; at most ${policy.maxServers} are started per session`
  const prefixes = new Set<string>()
  for (const entry of servers as Record<string, unknown>[]) {
    const name = entry && typeof entry.name === 'string' ? entry.name : undefined
    if (!name) return 'an MCP server without a name was sent'
    const shown = JSON.stringify(peerLine(headChars(name, 64)))
    const prefix = prefixOf(name)
    if (prefixes.has(prefix)) return `two MCP servers sent share the tool prefix ${prefix} (server ${shown}); give them distinct names`
    prefixes.add(prefix)
    if (entry.type === 'sse') return `MCP server ${shown}: SSE is not supported (send it as type http, Streamable HTTP)`
    if (entry.type === 'http') {
      if (!policy.http) return `MCP server ${shown}: this server does not connect to a client's HTTP MCP servers`
      let url: URL
      try {
        url = new URL(String(entry.url))
      } catch {
        return `MCP server ${shown}: url is not a URL`
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return `MCP server ${shown}: url must be http or https`
      if (url.username || url.password) return `MCP server ${shown}: put credentials in headers, not in the url`
      continue
    }
    if (entry.type !== undefined && entry.type !== 'stdio') return `MCP server ${shown}: unknown type ${JSON.stringify(headChars(String(entry.type), 32))}`
    if (!policy.stdio) return `MCP server ${shown}: this server does not start a client's stdio MCP servers`
    if (typeof entry.command !== 'string' || !entry.command) return `MCP server ${shown}: no command`
    if (policy.commands && !policy.commands.includes(entry.command)) {
      return `MCP server ${shown}: the command ${JSON.stringify(peerLine(headChars(entry.command, 200)))} is not one this server may run (allowed: ${policy.commands.join(', ') || 'none'})`
    }
  }
  return undefined
}

/**
 * Starts the MCP servers a client sent (check `sentServersRefusal` first), each with the bounds and the
 * env policy of a configured server: stdio servers get the host's environment by `inherit` (credentials
 * and `SUBAGENT_*` never) plus the env the client sent, in `cwd`. Each server's tools are listed once
 * and named `prefix__tool`. A server that does not start is left out and reported in `failed`; the rest serve.
 */
export async function startSentServers(
  servers: readonly SentMcpServer[], policy: SentServerPolicy, cwd: string, log: Logger,
): Promise<SentServers> {
  const started = await Promise.all(servers.map((server) => startOne(server, policy, cwd, log)))
  const failures = started.flatMap((one) => 'failure' in one ? [one] : [])
  if (failures.length) log.warn('%s', connectFailedLine(failures, servers.length))
  const connections = started.flatMap((one) => 'connection' in one ? [one.connection] : [])
  let closed: Promise<void> | undefined
  return {
    tools: started.flatMap((one) => 'tools' in one ? one.tools : []),
    failed: started.flatMap((one) => 'failure' in one ? [one.failure] : []),
    pids: () => connections.flatMap((connection) => connection.pid === undefined ? [] : [connection.pid]),
    close: () => closed ??= Promise.all(connections.map((connection) => connection.close())).then(() => {}),
  }
}

/** A server of the batch that did not start, and its tool prefix (for the log). */
interface Failed { failure: SentServerFailure; prefix: string }

/** Distinct causes the batch's log line quotes (servers failing alike share one). */
const MAX_CAUSES_SHOWN = 4
/** Servers named for one cause; any more are counted. */
const MAX_NAMES_SHOWN = 8
/** The head of a cause the log line keeps (UTF-16 code units, cut on a character boundary). */
const MAX_CAUSE_CHARS = 300

/**
 * The one log line for a batch's servers that did not start: how many, then the servers by cause (servers that failed
 * alike, e.g. on one dead host, share their cause), each cause's head on one line. A cause is cut before it is cleaned,
 * so a server answering with megabytes of text costs a few hundred characters here; the whole (redacted) message stays
 * in `failed`.
 */
function connectFailedLine(failures: readonly Failed[], sent: number): string {
  const byCause = new Map<string, string[]>()
  for (const { failure, prefix } of failures) {
    const prefixes = byCause.get(failure.message)
    if (prefixes) prefixes.push(prefix)
    else byCause.set(failure.message, [prefix])
  }
  const parts: string[] = []
  let shown = 0
  for (const [message, prefixes] of byCause) {
    if (parts.length === MAX_CAUSES_SHOWN) break
    const unnamed = prefixes.length - MAX_NAMES_SHOWN
    const names = prefixes.slice(0, MAX_NAMES_SHOWN).join(', ') + (unnamed > 0 ? ` and ${unnamed} more` : '')
    parts.push(`${names} (${peerLine(headChars(message, MAX_CAUSE_CHARS, '…'))})`)
    shown += prefixes.length
  }
  if (shown < failures.length) parts.push(`${failures.length - shown} more for other causes`)
  const rest = failures.length < sent ? ' The others serve.' : ''
  return `MCP_CONNECT_FAILED: ${failures.length} of the ${sent} MCP servers the client sent did not start: ${parts.join('; ')}.${rest}`
}

async function startOne(
  server: SentMcpServer, policy: SentServerPolicy, cwd: string, log: Logger,
): Promise<{ connection: Connection; tools: Tool[] } | Failed> {
  const prefix = prefixOf(server.name)
  const pairs = (list: { name: string; value: string }[] | undefined) =>
    Object.fromEntries((Array.isArray(list) ? list : []).filter((p) => p && typeof p.name === 'string' && typeof p.value === 'string').map((p) => [p.name, p.value]))
  let endpoint: Endpoint
  let secrets: string[]
  if ('url' in server) {
    const headers = pairs(server.headers)
    endpoint = { kind: 'http', url: new URL(server.url), headers, killGrace: policy.killGrace }
    secrets = Object.values(headers)
  } else {
    const env = { inherit: policy.inherit, exclude: [...policy.envExclude], set: pairs(server.env) }
    endpoint = {
      kind: 'stdio', command: server.command, args: Array.isArray(server.args) ? server.args.map(String) : [],
      env: serverEnv(process.env, env), cwd, killGrace: policy.killGrace, maxMessageBytes: policy.maxMessageBytes,
    }
    secrets = secretsOf(process.env, env, {})
  }
  const redactor = new Redactor(secrets)
  let connection: Connection | undefined
  try {
    connection = await Connection.open(endpoint, { timeout: policy.startupTimeout, redactor, clientName: `cordis-subagents:${prefix}` })
    const listed = await connection.listTools(policy.startupTimeout)
    const tools: Tool[] = []
    for (const tool of listed.slice(0, policy.maxTools)) {
      const named = mountedName(prefix, tool.name)
      if ('name' in named) tools.push(mcpTool(named.name, tool, connection, { server: prefix, callTimeout: policy.callTimeout, bounds: policy.bounds }, log))
    }
    return { connection, tools }
  } catch (error) {
    await connection?.close()
    const message = redactor.redact(describeError(error))
    const failure: SentServerFailure = {
      name: headChars(server.name, 64),
      code: 'MCP_CONNECT_FAILED',
      message: error instanceof McpError ? message : `The MCP server did not list its tools: ${message}`,
    }
    return { failure, prefix }
  }
}
