import { hash, randomUUID, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import type { ServedSession } from './session.js'
import { bearerToken, defaultHosts, hostForUrl, hostHeader } from '@cordis-subagents/shared'
import { readBody } from './body.js'
import { answerCancelled, cancelsOnly, idRefusal } from './request-ids.js'
import { type ServerSdk, serverSdk } from './sdk.js'
import { pollIntervalFor } from './tasks.js'

export interface HttpOptions {
  host: string
  port: number
  path: string
  token: string
  allowedHosts: readonly string[]
  allowedOrigins: readonly string[]
  maxBodyBytes: number
  /** Ms a request's body has to arrive in full once its headers are in (headers: the lesser of this and 30 s; idle keep-alive: and 5 s). */
  bodyTimeout: number
  /** Open TCP connections at once; Node closes each one past it as it arrives. */
  maxConnections: number
  maxSessions: number
  sessionIdleTimeout: number
  maxRequestsPerMinute: number
  newSession(): Promise<ServedSession>
}

// Idle times and rate windows are measured on the monotonic clock (performance.now()): a step of the wall clock
// (an NTP correction, a VM resumed, `date -s`) neither ends them early nor stretches them.
interface Live {
  transport: StreamableHTTPServerTransport
  session: ServedSession
  /** When it was last used (performance.now()). */
  lastSeen: number
  /** Its cancels past maxRequestsPerMinute this minute (CANCEL_RESERVE_PER_MINUTE); `start` is on performance.now(). */
  cancels?: { start: number; count: number }
}

/**
 * Cancels one live session may send per minute once maxRequestsPerMinute is spent (`notifications/cancelled`,
 * `tasks/cancel`, the DELETE that ends it): a client's cancel is never refused by the shared limit, and stays bounded.
 */
const CANCEL_RESERVE_PER_MINUTE = 60
/** The largest body a cancel past the limit may carry (bytes); a bigger one gets 429 like any request past it. */
const CANCEL_BODY_BYTES = 16 * 1024

/** How often Node checks connections against `headersTimeout` (its default, 30 s, let a 30 s limit cut at 60 s). */
const TIMEOUT_CHECK_MS = 1_000
/** A keep-alive connection with no request in flight is closed after the lesser of this (Node's default) and bodyTimeout. */
const KEEP_ALIVE_MS = 5_000

/**
 * The Streamable HTTP front: every request passes Host (DNS rebinding), Origin, bearer token,
 * rate, body-size, body-deadline and JSON-RPC id length checks before the SDK transport of its session sees it.
 * Sessions are capped and evicted when idle; a cancelled request is answered so the SDK lets go of it.
 * Connections are capped (`maxConnections`); headers, bodies and idle keep-alive connections have deadlines,
 * a response being streamed (SSE) has none: it lasts as long as its session.
 */
export class HttpFront {
  /** @internal The window maxRequestsPerMinute and a session's cancel reserve count in (ms): a minute, which a test may shorten. */
  static minuteMs = 60_000
  private server?: HttpServer
  private readonly sessions = new Map<string, Live>()
  /** Initialize requests between the cap check and their session's id (counted against maxSessions). */
  private reserved = 0
  private sweeper?: NodeJS.Timeout
  /** This minute's requests; `start` is on performance.now() (-Infinity: the first request starts a minute). */
  private window = { start: -Infinity, count: 0 }
  /** The token's SHA-256 digest, made once: each request's token is hashed and compared with it in constant time. */
  private readonly tokenDigest: Buffer
  url = ''

  constructor(private readonly options: HttpOptions) {
    this.tokenDigest = sha256(options.token)
  }

  get sessionCount(): number {
    return this.sessions.size
  }

  forEachSession(fn: (session: ServedSession) => void) {
    for (const live of this.sessions.values()) fn(live.session)
  }

  /** The poll interval (ms) told to task clients now: the working tasks of every session fit in half of maxRequestsPerMinute. */
  taskPollInterval(): number {
    let working = 0
    for (const live of this.sessions.values()) working += live.session.workingTasks
    return pollIntervalFor(working, this.options.maxRequestsPerMinute, HttpFront.minuteMs)
  }

  /** True once it listens; false when it was closed first (unloaded while it started): then it never serves. */
  async listen(): Promise<boolean> {
    if (this.closed) return false
    const { bodyTimeout, maxConnections } = this.options
    // The body deadline is ours (`readBody`: a 408 with a code; Node's requestTimeout would answer a bare 408). Neither
    // cuts a response being streamed (SSE): a request is timed only until its body is in.
    const server = createServer({
      headersTimeout: Math.min(30_000, bodyTimeout), requestTimeout: 0, connectionsCheckingInterval: TIMEOUT_CHECK_MS,
    }, (req, res) => void this.handle(req, res).catch(() => {
      if (!res.headersSent) reply(res, 500, 'internal error')
      else res.end()
    }))
    // Between requests only: a response being streamed (SSE) is not idle in this sense and is never cut by it.
    server.keepAliveTimeout = Math.min(KEEP_ALIVE_MS, bodyTimeout)
    // Past it, Node closes each new connection as it arrives (idle and half-open ones count).
    server.maxConnections = maxConnections
    this.server = server
    const listening = await new Promise<boolean>((resolve, reject) => {
      server.once('error', reject)
      // Closed before it bound (a close does not fail a listen in flight): settled all the same, and a late bind is undone.
      server.once('close', () => resolve(false))
      server.listen(this.options.port, this.options.host, () => {
        if (this.closed) server.close()
        resolve(!this.closed)
      })
    })
    if (!listening) return false
    const { port } = server.address() as AddressInfo
    this.url = `http://${hostForUrl(this.options.host)}:${port}${this.options.path}`
    const own = [...defaultHosts('127.0.0.1', port), hostHeader(this.options.host, port)]
    this.hosts = new Set([...own, ...this.options.allowedHosts].map((h) => h.toLowerCase()))
    // This server's own loopback origin is the same origin, not a rebinding: accepted like allowedOrigins.
    this.origins = new Set([...own.map((h) => `http://${h.toLowerCase()}`), ...this.options.allowedOrigins])
    this.sweeper = setInterval(() => this.sweep(), Math.min(this.options.sessionIdleTimeout, 60_000))
    this.sweeper.unref()
    return true
  }

  private hosts = new Set<string>()
  private closed = false
  private origins = new Set<string>()

  async close(): Promise<void> {
    this.closed = true
    clearInterval(this.sweeper)
    const sessions = [...this.sessions.values()]
    this.sessions.clear()
    await Promise.all(sessions.map((live) => this.end(live)))
    const server = this.server
    if (!server) return
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (!this.hosts.has(String(req.headers.host ?? '').toLowerCase())) return reply(res, 403, 'forbidden Host header')
    const origin = req.headers.origin
    if (origin !== undefined && !this.origins.has(origin)) return reply(res, 403, 'forbidden Origin')
    // Before the token: OAuth discovery (/.well-known/oauth-*, /register, /authorize) finds nothing here.
    if (url.pathname !== this.options.path) return reply(res, 404, `not found: the MCP endpoint is ${this.options.path}; this server does not do OAuth`)
    const refused = this.refusal(req.headers.authorization)
    if (refused) return reply(res, 401, refused)
    const id = req.headers['mcp-session-id']
    // Past the limit only a live session's cancel may pass (a POST of cancels only, or its DELETE), from its own reserve.
    const overLimit = !this.admitRate()
    const mayCancel = typeof id === 'string' && this.sessions.has(id) && (req.method === 'POST' || req.method === 'DELETE')
    if (overLimit && !mayCancel) return reply(res, 429, 'too many requests')
    const maxBody = overLimit ? Math.min(CANCEL_BODY_BYTES, this.options.maxBodyBytes) : this.options.maxBodyBytes

    // Every body is read, a GET's or DELETE's (normally empty) too: none is left open past bodyTimeout.
    const read = await readBody(req, maxBody, this.options.bodyTimeout)
    if ('refused' in read) {
      if (read.refused === 'too-large') return overLimit ? reply(res, 429, 'too many requests') : reply(res, 413, `the body is over ${maxBody} bytes`)
      return refuseSlowBody(res, this.options.bodyTimeout)
    }
    let body: unknown
    if (req.method === 'POST') {
      try {
        body = JSON.parse(read.text)
      } catch {
        return reply(res, 400, 'the body is not JSON')
      }
      const refused = idRefusal(body)
      if (refused) return reply(res, 400, refused.message, refused)
    }
    const live = typeof id === 'string' ? this.sessions.get(id) : undefined
    if (overLimit && !(live && (req.method === 'DELETE' || cancelsOnly(body)) && admitCancel(live))) return reply(res, 429, 'too many requests')
    if (live) {
      live.lastSeen = performance.now()
      await live.transport.handleRequest(req, res, body)
      return answerCancelled(live.transport, body)
    }
    if (id !== undefined) return reply(res, 404, 'unknown or expired session')
    const sdk = await serverSdk()
    if (req.method !== 'POST' || !sdk.isInitializeRequest(body)) return reply(res, 400, 'no session: start with an initialize request')
    if (this.sessions.size + this.reserved >= this.options.maxSessions && !this.evictIdlest()) return reply(res, 503, 'too many sessions')
    // The slot is taken before the first await, so concurrent initialize requests cannot all pass the check.
    this.reserved++
    let held = true
    const release = () => {
      if (held) this.reserved--
      held = false
    }
    try {
      await this.open(sdk, req, res, body, release)
    } finally {
      release()
    }
  }

  /** A new session for an initialize request; it counts in `sessions` once the SDK gives it an id. */
  private async open(sdk: ServerSdk, req: IncomingMessage, res: ServerResponse, body: unknown, release: () => void) {
    const session = await this.options.newSession()
    const transport: StreamableHTTPServerTransport = new sdk.StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        release()
        this.sessions.set(sessionId, { transport, session, lastSeen: performance.now() })
      },
    })
    transport.onclose = () => {
      const sessionId = transport.sessionId
      if (sessionId && this.sessions.get(sessionId)?.transport === transport) this.sessions.delete(sessionId)
      void session.close()
    }
    try {
      await session.server.connect(transport)
      await transport.handleRequest(req, res, body)
    } finally {
      const sessionId = transport.sessionId
      if (!sessionId || this.sessions.get(sessionId)?.transport !== transport) await this.end({ transport, session, lastSeen: 0 })
    }
  }

  /** Why a request is refused (401), or undefined for the right token. No OAuth challenge: there is no OAuth here. */
  private refusal(header: string | undefined): string | undefined {
    if (typeof header !== 'string' || !header) {
      return 'missing token: send Authorization: Bearer <token> (the serve config\'s token, or ctx.mcpServe.token); this server does not do OAuth'
    }
    if (timingSafeEqual(sha256(bearerToken(header, this.options.token.length) ?? ''), this.tokenDigest)) return undefined
    return 'wrong token: the Authorization header does not carry this server\'s bearer token (Authorization: Bearer <token>); this server does not do OAuth'
  }

  private admitRate(): boolean {
    const now = performance.now()
    if (now - this.window.start >= HttpFront.minuteMs) this.window = { start: now, count: 0 }
    return ++this.window.count <= this.options.maxRequestsPerMinute
  }

  private sweep() {
    const cutoff = performance.now() - this.options.sessionIdleTimeout
    for (const [id, live] of this.sessions) {
      if (live.lastSeen < cutoff) {
        this.sessions.delete(id)
        void this.end(live)
      }
    }
  }

  /** Makes room by closing the least recently used session idle for at least a minute. */
  private evictIdlest(): boolean {
    let idlest: [string, Live] | undefined
    for (const entry of this.sessions) if (!idlest || entry[1].lastSeen < idlest[1].lastSeen) idlest = entry
    if (!idlest || performance.now() - idlest[1].lastSeen < 60_000) return false
    this.sessions.delete(idlest[0])
    void this.end(idlest[1])
    return true
  }

  private async end(live: Live) {
    await live.transport.close().catch(() => {})
    await live.session.close()
  }
}

/** Takes one of a live session's cancels past the request limit (CANCEL_RESERVE_PER_MINUTE a minute); false when they are spent. */
function admitCancel(live: Live): boolean {
  const now = performance.now()
  if (!live.cancels || now - live.cancels.start >= HttpFront.minuteMs) live.cancels = { start: now, count: 0 }
  return ++live.cancels.count <= CANCEL_RESERVE_PER_MINUTE
}

/** Digests of equal length whatever the input, so `timingSafeEqual` compares them without telling the token's length. */
function sha256(value: string): Buffer {
  return hash('sha256', value, 'buffer')
}

/**
 * A refusal as a JSON-RPC error. The connection closes after it: a refused request's body may still be on its
 * way (unread, or cut off), and a keep-alive connection would wait for its end without a bound.
 */
function reply(res: ServerResponse, status: number, message: string, error: { code: number; data?: unknown } = { code: -32000 }) {
  res.writeHead(status, { 'content-type': 'application/json', connection: 'close' })
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: error.code, message, ...error.data === undefined ? {} : { data: error.data } }, id: null }))
}

/** 408 for a body not complete within `bodyTimeout`; its connection is closed once the answer is written. */
function refuseSlowBody(res: ServerResponse, timeout: number) {
  reply(res, 408, `MCP_SERVE_BODY_TIMEOUT: the request body did not arrive in full within ${timeout} ms (bodyTimeout); `
    + 'send the whole body at once (and a Content-Length that matches it).', { code: -32000, data: { code: 'MCP_SERVE_BODY_TIMEOUT' } })
  res.socket?.destroySoon()
}
