import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js'
import { describeError, type Redactor } from '@cordis-subagents/shared'
import { McpError } from './errors.js'
import { type ClientSdk, clientSdk } from './sdk.js'
import { StdioProcess } from './stdio-process.js'
import { callAsTask, LiveTasks, TaskTimeout } from './task-call.js'

export type Endpoint =
  | { kind: 'stdio'; command: string; args: string[]; cwd: string; env: Record<string, string>; killGrace: number; maxMessageBytes: number }
  | { kind: 'http'; url: URL; headers: Record<string, string>; killGrace: number }

type HttpEndpoint = Extract<Endpoint, { kind: 'http' }>
/** An HTTP connection's transport (its session id and protocol version), and where and how long its session's DELETE goes. */
interface HttpLink { endpoint: HttpEndpoint; transport: InstanceType<ClientSdk['StreamableHTTPClientTransport']> }

/** The most `tools/list` pages read (a server that pages forever is cut off). */
const MAX_LIST_PAGES = 32
/** The stderr tail kept for a crash diagnostic. */
const STDERR_TAIL_CHARS = 2048

export interface CallOptions {
  signal: AbortSignal
  timeout: number
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void
  /** Call it as an MCP task (`execution.taskSupport` is `required`): create, poll, result; a task left unfinished is cancelled. */
  task?: boolean
}

export interface OpenOptions {
  /** Milliseconds for the start and `initialize`. */
  timeout: number
  redactor: Redactor
  clientName: string
  /** Aborts the start (the load was disposed): the server is stopped and `open` rejects. */
  signal?: AbortSignal
}

/** What `open` rejects with when its signal aborted the start. */
function aborted(signal: AbortSignal): McpError {
  const why = describeError(signal.reason)
  return new McpError('MCP_CONNECT_FAILED', `The MCP server's start was aborted (${why}); the server was stopped.`, {
    cause: signal.reason,
  })
}

/**
 * Ends an HTTP session on the server: the DELETE that the SDK's transport close never sends. It goes on a transport of its own
 * (the connection's is closed by now, or the SDK closed it when a start failed after `initialize`) and is waited for at most
 * `killGrace`, then given up (the request aborted). Best-effort: a 405 (the server does not end sessions so), an answer not
 * given in time and any failure are ignored; the server's idle timeout is left to end the session then.
 */
async function endSession(sdk: ClientSdk, http: HttpLink | undefined): Promise<void> {
  const sessionId = http?.transport.sessionId
  if (!http || !sessionId) return
  const transport = new sdk.StreamableHTTPClientTransport(http.endpoint.url, { sessionId, requestInit: { headers: http.endpoint.headers } })
  const version = http.transport.protocolVersion
  if (version) transport.setProtocolVersion(version)
  const timer = setTimeout(() => void transport.close(), http.endpoint.killGrace)
  try {
    await transport.start()
    await transport.terminateSession()
  } catch {
    // ignored (see above): the session is the server's to expire
  } finally {
    clearTimeout(timer)
    await transport.close()
  }
}

/** One connected MCP server: its tools, calls to them, and a close that reaps a stdio server or ends an HTTP session. */
export class Connection {
  onToolsChanged?: () => void
  /** Called once when the server goes away by itself (not by `close()`), with a redacted diagnostic. */
  onLost?: (diagnostic: string) => void
  private closing = false
  private stderrTail = ''
  /** The DELETE of an HTTP session, sent once however often `close()` runs. */
  private ending?: Promise<void>
  /** The tasks of calls in flight that were created and have not ended: `close()` cancels them first. */
  private readonly tasks = new LiveTasks()

  private constructor(
    private readonly sdk: ClientSdk,
    private readonly client: Client,
    private readonly stdio: StdioProcess | undefined,
    private readonly http: HttpLink | undefined,
    private readonly redactor: Redactor,
  ) {}

  /** Checks a server's JSON Schema on the host, regexes on RE2 (see validation.ts). */
  get schemaCheck(): ClientSdk['schemaCheck'] {
    return this.sdk.schemaCheck
  }

  get pid(): number | undefined {
    return this.stdio?.pid
  }

  /**
   * Starts (stdio) or reaches (HTTP) the server and initializes. `signal` aborts the start at once: the transport is
   * closed (a stdio server's group sent SIGTERM, SIGKILL after `killGrace`, and reaped) before this rejects; aborted
   * before the server was spawned, nothing is spawned.
   */
  static async open(endpoint: Endpoint, options: OpenOptions): Promise<Connection> {
    const { signal } = options
    const sdk = await clientSdk()
    if (signal?.aborted) throw aborted(signal)
    const client = new sdk.Client({ name: options.clientName, version: '0.1.0' }, { capabilities: {}, jsonSchemaValidator: sdk.outputSchemas })
    let connection!: Connection
    let stdio: StdioProcess | undefined
    let http: HttpLink | undefined
    let transport
    if (endpoint.kind === 'stdio') {
      stdio = new StdioProcess({ ...endpoint, onStderr: (chunk) => connection?.keepStderr(chunk) }, sdk.ReadBuffer, sdk.serializeMessage)
      transport = stdio
    } else {
      http = { endpoint, transport: new sdk.StreamableHTTPClientTransport(endpoint.url, { requestInit: { headers: endpoint.headers } }) }
      transport = http.transport
    }
    connection = new Connection(sdk, client, stdio, http, options.redactor)
    client.onclose = () => connection.lost()
    client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => connection.onToolsChanged?.())
    // Closing fails the pending initialize (the SDK rejects it once the transport reports closed).
    const abort = () => void connection.abandon()
    signal?.addEventListener('abort', abort, { once: true })
    try {
      // `connect` starts the transport (spawns a stdio server) synchronously: no abort comes unseen between the check above and it.
      await client.connect(transport, { timeout: options.timeout })
    } catch (error) {
      const diagnostic = connection.diagnostic(error)
      await connection.close()
      if (signal?.aborted) throw aborted(signal)
      throw new McpError('MCP_CONNECT_FAILED', `The MCP server did not start or answer initialize: ${diagnostic}. Check the command/url, and raise startupTimeout if it is slow to start.`)
    } finally {
      signal?.removeEventListener('abort', abort)
    }
    if (signal?.aborted) {
      await connection.close()
      throw aborted(signal)
    }
    return connection
  }

  /** Every tool the server lists (at most `MAX_LIST_PAGES` pages). */
  async listTools(timeout: number): Promise<McpTool[]> {
    if (!this.client.getServerCapabilities()?.tools) return []
    const tools: McpTool[] = []
    let cursor: string | undefined
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = await this.client.listTools(cursor ? { cursor } : {}, { timeout })
      tools.push(...result.tools)
      cursor = result.nextCursor
      if (!cursor) break
    }
    return tools
  }

  /** Calls a tool; the SDK sends `notifications/cancelled` when `signal` aborts or `timeout` passes. */
  async call(name: string, args: Record<string, unknown>, options: CallOptions): Promise<unknown> {
    try {
      if (options.task) return await callAsTask(this.client, this.sdk, name, args, { ...options, live: this.tasks })
      return await this.client.callTool({ name, arguments: args }, undefined, {
        signal: options.signal,
        timeout: options.timeout,
        onprogress: options.onProgress,
      })
    } catch (error) {
      throw this.callError(error, options)
    }
  }

  /**
   * Closes the connection; a stdio server is stopped (its group) and reaped before this resolves, an HTTP server's session
   * is ended (a DELETE, waited for at most `killGrace`; see `endSession`). Each task of a call in flight that has not ended
   * is sent `tasks/cancel` first (bounded, best-effort), so it does not run on to its TTL.
   */
  async close(): Promise<void> {
    this.closing = true
    await this.tasks.cancelAll()
    try {
      await this.client.close()
    } catch {
      // closing twice or after a crash
    }
    await (this.ending ??= endSession(this.sdk, this.http))
    await this.stdio?.close()
  }

  /** Gives up a start: as `close()`, but a stdio server is sent SIGTERM at once (it never served: no wait on its stdin's end). */
  private abandon(): Promise<void> {
    this.closing = true
    void this.stdio?.close(false)
    return this.close()
  }

  private callError(error: unknown, options: CallOptions): Error {
    const code = (error as { code?: unknown }).code
    const told = options.task ? 'tasks/cancel' : 'notifications/cancelled'
    if (options.signal.aborted) return new Error(`the call was cancelled (${describeError(options.signal.reason)}); the MCP server was told (${told})`)
    if (error instanceof TaskTimeout || (error instanceof this.sdk.McpError && code === this.sdk.ErrorCode.RequestTimeout)) {
      return new McpError('MCP_TIMEOUT', `MCP_TIMEOUT: no answer within ${options.timeout} ms; the server was told to cancel (${told}). Raise callTimeout for slow tools.`)
    }
    if (this.closing || (error instanceof this.sdk.McpError && code === this.sdk.ErrorCode.ConnectionClosed)) {
      return new McpError('MCP_SERVER_CLOSED', `MCP_SERVER_CLOSED: the MCP server went away during the call (${this.diagnostic(error)}). Its tools are unmounted until the plugin is reloaded.`)
    }
    return new McpError('MCP_CALL_FAILED', `MCP_CALL_FAILED: ${this.diagnostic(error)}`)
  }

  private lost() {
    if (this.closing) return
    this.closing = true
    this.onLost?.(this.diagnostic(undefined))
    void this.stdio?.close()
  }

  private keepStderr(chunk: string) {
    this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_CHARS)
  }

  /** What went wrong, redacted: the error, the exit status of a stdio server, its stderr tail. */
  private diagnostic(error: unknown): string {
    const parts: string[] = []
    if (error !== undefined) parts.push(describeError(error))
    const exit = this.stdio?.exit
    if (exit) parts.push(`the process exited (${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`})`)
    else if (error === undefined) parts.push('the connection closed')
    const tail = this.stderrTail.trim()
    if (tail) parts.push(`stderr: ${tail.slice(-1024)}`)
    return this.redactor.redact(parts.join('; '))
  }
}
