import { resolve } from 'node:path'
import type { Context } from 'cordis'
import type {} from '@cordis-subagents/tools'
import { describeError, peerLine, Redactor } from '@cordis-subagents/shared'
import { claimServerName } from './claims.js'
import type { Config } from './config.js'
import { Connection, type Endpoint } from './connection.js'
import { serverEnv, secretsOf, type EnvPolicy } from './env.js'
import { McpError } from './errors.js'
import { ToolMount } from './mount.js'
import { Relister } from './relist.js'
import type { McpLaunch, McpServers } from './servers.js'

export const name = 'mcp-client'
export const reusable = true
export const inject = { tools: { required: true }, mcp: { required: false } }

/**
 * One MCP server: connects (stdio or Streamable HTTP), mounts its tools as `name__tool`, follows
 * `notifications/tools/list_changed`, and on unload removes the tools and stops (reaps) a stdio
 * server. A server that cannot be reached fails this load only; one that goes away later has its
 * tools removed and the error logged.
 */
export async function apply(ctx: Context, config: Config) {
  const log = ctx.logger(`mcp:${config.name}`)
  const { endpoint, launch, secrets } = endpointOf(ctx, config)
  // Before anything starts: a name another load holds fails this one (MCP_DUPLICATE_NAME); ours is freed with this scope.
  claimServerName(ctx, config.name)
  const redactor = new Redactor(secrets)
  const starting = new AbortController()
  let disposed = false
  let gone = false
  let connection: Connection | undefined
  ctx.on('dispose', () => {
    disposed = true
    // A start in progress is aborted now (its server stopped and reaped), not left to run out its startupTimeout;
    // this apply, still a task of the scope, ends once it is reaped.
    starting.abort(new Error(`the load of "${config.name}" was disposed while its server started`))
    const open = connection
    // cordis does not await a dispose listener; as a scope task, `ctx.lifecycle.flush()` (and a reload) waits for the server's reaping.
    if (open) ctx.scope.ensure(() => open.close())
  })
  try {
    connection = await Connection.open(endpoint, {
      timeout: config.startupTimeout ?? 30_000, redactor, clientName: `cordis-subagents:${config.name}`, signal: starting.signal,
    })
  } catch (error) {
    // Disposed while it started (an unload, or an edit that applies this entry again): this apply is over, quietly. Failing
    // would log a failure for a load that is gone, and fail the scope, which an edit has restarted for the new apply.
    if (disposed) return
    throw error
  }
  const open = connection
  const mount = new ToolMount(ctx, open, {
    server: config.name,
    allow: config.allow,
    deny: config.deny ?? [],
    maxTools: config.maxTools ?? 128,
    callTimeout: config.callTimeout ?? 120_000,
    bounds: {
      maxParts: config.maxContentParts ?? 16,
      maxPartChars: config.maxPartChars ?? 16 * 1024,
      maxImages: config.maxImages ?? 4,
      maxImageBytes: config.maxImageBytes ?? 1024 * 1024,
    },
  }, log)

  const relister = new Relister(async () => {
    if (disposed) return
    try {
      const tools = await open.listTools(config.startupTimeout ?? 30_000)
      if (!disposed && !gone) mount.sync(tools)
    } catch (error) {
      if (!disposed && !gone) log.warn('%s: listing tools failed: %s', config.name, peerLine(redactor.redact(describeError(error))))
    }
  }, config.relistInterval ?? 1_000)
  ctx.on('dispose', () => relister.close())
  open.onToolsChanged = () => relister.changed()
  open.onLost = (diagnostic) => {
    if (disposed) return
    gone = true
    relister.close()
    mount.unmountAll()
    log.error('MCP_SERVER_CLOSED: %s: the server went away (%s); its tools are removed. Reload the plugin to start it again.', config.name, peerLine(diagnostic))
  }
  await relister.first()
  if (disposed) return
  const servers = ctx.get('mcp') as McpServers | undefined
  servers?.add({ name: config.name, launch, tools: () => mount.names(), filtered: !!config.allow || !!config.deny?.length })
  log.debug('%s: %d tools mounted', config.name, mount.names().length)
}

function endpointOf(ctx: Context, config: Config): { endpoint: Endpoint; launch: McpLaunch; secrets: string[] } {
  const where = `mcp: server "${config.name}"`
  if (!!config.command === !!config.url) {
    throw new McpError('MCP_INVALID_CONFIG', `${where}: set exactly one of command (a stdio server) and url (a Streamable HTTP server).`)
  }
  const policy: EnvPolicy = { inherit: config.inherit ?? 'core', exclude: config.envExclude ?? [], set: config.env ?? {} }
  const headers = config.headers ?? {}
  const secrets = secretsOf(process.env, policy, headers)
  if (config.command) {
    const args = config.args ?? []
    const env = serverEnv(process.env, policy)
    const passed = Object.entries(policy.set).flatMap(([name, value]) =>
      typeof value === 'string' ? [{ name, value }] : value === true && process.env[name] !== undefined ? [{ name, value: process.env[name]! }] : [])
    return {
      endpoint: {
        kind: 'stdio', command: config.command, args, env,
        cwd: resolve(ctx.baseDir ?? process.cwd(), config.cwd ?? '.'),
        killGrace: config.killGrace ?? 2_000, maxMessageBytes: config.maxMessageBytes ?? 8 * 1024 * 1024,
      },
      launch: { name: config.name, command: config.command, args, env: passed },
      secrets,
    }
  }
  let url: URL
  try {
    url = new URL(config.url!)
  } catch {
    throw new McpError('MCP_INVALID_CONFIG', `${where}: url is not a URL.`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new McpError('MCP_INVALID_CONFIG', `${where}: url must be http or https, got ${url.protocol}`)
  }
  if (url.username || url.password) {
    throw new McpError('MCP_INVALID_CONFIG', `${where}: put credentials in headers, not in the url.`)
  }
  return {
    endpoint: { kind: 'http', url, headers, killGrace: config.killGrace ?? 2_000 },
    launch: { type: 'http', name: config.name, url: url.href, headers: Object.entries(headers).map(([name, value]) => ({ name, value })) },
    secrets,
  }
}
