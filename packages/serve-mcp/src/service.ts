import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { type Context, Service } from 'cordis'
import type {} from '@cordis-subagents/agent'
import type {} from '@cordis-subagents/tools'
import { bindRefusal, duplicateLoadMessage, isTokenShape, takeServiceSlot } from '@cordis-subagents/shared'
import { ServeMcpError } from './errors.js'
import { Config } from './config.js'
import { HttpFront } from './http.js'
import { serverSdk } from './sdk.js'
import { ServedSession, type SessionOptions } from './session.js'
import { holdExit, stdioOutput, stdioSignals } from './stdio.js'
import { TASK_POLL_MS } from './tasks.js'

declare module 'cordis' {
  interface Context {
    mcpServe: McpServe
  }
}

/**
 * `@cordis-subagents/serve-mcp`: the configured delegation tools of `ctx.tools` served as MCP
 * tools, over stdio (this process's stdin/stdout; see the `cordis-subagents-mcp` bin) or
 * Streamable HTTP (loopback, bearer token, Host/Origin checks). `ctx.mcpServe` tells the URL and
 * the token.
 */
export class McpServe extends Service {
  static readonly inject = ['tools', 'agents']
  static readonly Config = Config
  /** Each load is its own instance, stopped with its own entry; a second live load of an app is refused (MCP_SERVE_DUPLICATE_LOAD). */
  static readonly reusable = true

  /** HTTP: the endpoint, once listening. */
  url = ''
  /** HTTP: the bearer token clients send (configured, or generated for this start). */
  readonly token: string
  private http?: HttpFront
  private stdioSession?: ServedSession
  private readonly session: SessionOptions

  constructor(ctx: Context, private readonly options: Config) {
    // Before super(): a service that throws after it would still be started by cordis.
    if (!options.tools?.length) throw new ServeMcpError('MCP_SERVE_INVALID_CONFIG', 'serve-mcp: tools must name at least one tool to serve (e.g. subagent).')
    const refused = options.transport === 'http'
      ? bindRefusal({ host: options.host ?? '127.0.0.1', credential: true, allowRemote: options.allowRemote === true })
      : undefined
    if (refused) throw new ServeMcpError('MCP_SERVE_INVALID_CONFIG', `serve-mcp: ${refused}`)
    if (options.token && !isTokenShape(options.token, MAX_TOKEN_LENGTH)) {
      throw new ServeMcpError('MCP_SERVE_INVALID_CONFIG', `serve-mcp: token must be 1-${MAX_TOKEN_LENGTH} printable ASCII characters `
        + 'without spaces (a client sends it in a header as it is; its value is not shown), or leave it out to get a random one per start.')
    }
    const serves = options.transport === 'stdio' ? 'stdio' : `${options.host ?? '127.0.0.1'}:${options.port || '<a free port>'}`
    const slot = takeServiceSlot(ctx, 'mcpServe', serves)
    if ('holder' in slot) throw new ServeMcpError('MCP_SERVE_DUPLICATE_LOAD', duplicateLoadMessage('serve-mcp', 'mcpServe', slot.holder))
    super(ctx, 'mcpServe', true)
    this.release = slot.release
    this.token = options.token || randomBytes(32).toString('base64url')
    this.session = {
      tools: options.tools,
      model: options.model,
      persona: options.persona,
      cwd: options.cwd === undefined ? undefined : resolve(ctx.baseDir ?? process.cwd(), options.cwd),
      toolFilter: options.toolFilter,
      maxConcurrentCalls: options.maxConcurrentCalls ?? 8,
      maxDepth: options.maxDepth,
      budget: options.budget,
      taskSupport: options.taskSupport ?? 'optional',
      tasks: { maxTasks: options.maxTasks ?? 16, ttl: options.taskTtl ?? 60 * 60_000 },
    }
    if (options.transport === 'stdio') stdioSignals().emit('applied')
  }

  private stopped = false
  /** Frees this app's mcpServe slot for the next load. */
  private readonly release: () => void

  /** Sessions open now (HTTP), or 1 for a connected stdio client. */
  get sessions(): number {
    return this.http?.sessionCount ?? (this.stdioSession ? 1 : 0)
  }

  override async start() {
    // cordis runs a start it scheduled even after the stop (a load disposed at once): such a start does nothing.
    if (this.stopped) return
    const served = new Set(this.options.tools)
    this.ctx.on('tools/changed', (name) => {
      if (!served.has(name)) return
      this.stdioSession?.toolsChanged()
      this.http?.forEachSession((session) => session.toolsChanged())
    })
    if (this.options.transport === 'stdio') {
      let step = 'the MCP SDK failed to load (reinstall @cordis-subagents/serve-mcp: it depends on @modelcontextprotocol/sdk)'
      try {
        const sdk = await serverSdk()
        step = 'the stdio server failed to start'
        this.stdioSession = await ServedSession.create(this.ctx, this.session)
        await this.stdioSession.server.connect(new sdk.StdioServerTransport(process.stdin, stdioOutput()))
      } catch (error) {
        stdioSignals().emit('failed', error, step)
        throw error
      }
      stdioSignals().emit('ready')
      return
    }
    this.http = new HttpFront({
      host: this.options.host ?? '127.0.0.1',
      port: this.options.port ?? 0,
      path: this.options.path ?? '/mcp',
      token: this.token,
      allowedHosts: this.options.allowedHosts ?? [],
      allowedOrigins: this.options.allowedOrigins ?? [],
      maxBodyBytes: this.options.maxBodyBytes ?? 1024 * 1024,
      bodyTimeout: this.options.bodyTimeout ?? 60_000,
      maxConnections: this.options.maxConnections ?? 1024,
      maxSessions: this.options.maxSessions ?? 16,
      sessionIdleTimeout: this.options.sessionIdleTimeout ?? 30 * 60_000,
      maxRequestsPerMinute: this.options.maxRequestsPerMinute ?? 600,
      // Tasks are polled at an interval that fits maxRequestsPerMinute with the tasks working in every session now.
      newSession: () => ServedSession.create(this.ctx, {
        ...this.session, tasks: { ...this.session.tasks, pollInterval: () => this.pollInterval() },
      }),
    })
    // Unloaded while it started (cordis runs a scheduled start after the stop): nothing is served, nothing to log.
    if (!await this.http.listen()) return
    this.url = this.http.url
    this.ctx.logger('mcp-serve').info('serving MCP at %s (bearer token required)', this.url)
  }

  private pollInterval(): number {
    return this.http?.taskPollInterval() ?? TASK_POLL_MS
  }

  override async stop() {
    this.stopped = true
    this.release()
    const { stdioSession, http } = this
    this.stdioSession = undefined
    this.http = undefined
    // The bin waits for it (holdExit) before it stops the providers and exits: cordis does not await this stop.
    const closing = (async () => {
      await stdioSession?.close()
      await http?.close()
    })()
    holdExit(closing)
    await closing
  }
}

/** Longest configured token (the header is not read past it). */
const MAX_TOKEN_LENGTH = 4096

