import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { Context, Service } from 'cordis'
import { defaultHosts, duplicateLoadMessage, hostForUrl, listenInTurn, originsOf, takeServiceSlot } from '@cordis-subagents/shared'
import type {} from '@cordis-subagents/agent'
import type {} from '@cordis-subagents/subagents-service'
import { checkedConfig, Config } from './config.js'
import { ConsoleError } from './errors.js'
import { createHandler } from './http.js'
import { LiveHub } from './live.js'
import { observeDelegations } from './model.js'
import type { ViewHost } from './node-view.js'
import { TreeStore } from './tree-store.js'

declare module 'cordis' {
  interface Context {
    subagentConsole: SubagentConsole
  }
}

/**
 * `ctx.subagentConsole`: a live web view of every delegation tree of this process, served on
 * loopback behind a token, Host and Origin checked (README: Security). Once it listens, `url`
 * (with the token in its fragment) opens the page.
 */
export class SubagentConsole extends Service<Config> {
  static inject = { agents: { required: true }, subagents: { required: true } }
  static Config = Config
  /** Each load is its own instance, stopped with its own entry; a second live load of an app is refused (DUPLICATE_LOAD). */
  static reusable = true

  /** The page's address with the token (`http://127.0.0.1:port/#token=…`); empty until it listens. */
  url = ''
  /** The address without the token. */
  baseUrl = ''
  port = 0
  /** The token the API requires (configured, else generated for this start). Never logged. */
  readonly token: string
  readonly store: TreeStore
  private readonly live: LiveHub
  private readonly refused = new Map<string, number>()
  private http?: Server
  /** Set by `stop`. cordis runs a start it scheduled even after the stop (a load disposed at once): that start leaves nothing open. */
  private stopped = false
  /** Frees this app's subagentConsole slot for the next load. */
  private readonly release: () => void

  constructor(ctx: Context, config?: Partial<Config>) {
    // Checked before `super`: a Service registers its start at construction, and a refused load must not reach it.
    const valid = checkedConfig(config)
    const slot = takeServiceSlot(ctx, 'subagentConsole', `${hostForUrl(valid.host)}:${valid.port || '<a free port>'}`)
    if ('holder' in slot) throw new ConsoleError('DUPLICATE_LOAD', duplicateLoadMessage('console', 'subagentConsole', slot.holder))
    // Set by `start` once it listens, not by cordis: cordis sets a service after any start, even one a reload overtook.
    super(ctx, 'subagentConsole', true)
    delete (this as { [Context.expose]?: string })[Context.expose]
    this.release = slot.release
    this.config = valid
    this.token = this.config.token ?? randomBytes(24).toString('base64url')
    this.store = new TreeStore(this.config, (runId) => this.live.changed(runId), (treeId) => this.live.removed(treeId))
    const { flushInterval, maxViewerBufferBytes: maxBuffer, maxViewers } = this.config
    this.live = new LiveHub(this.host, { flushInterval, maxBuffer, maxViewers })
    observeDelegations(ctx, this.store)
  }

  /** Refusals so far, by code (UNAUTHENTICATED, FORBIDDEN_HOST, …). */
  get refusals(): Record<string, number> {
    return Object.fromEntries(this.refused)
  }

  /** Live pages connected now. */
  get viewers(): number {
    return this.live.size
  }

  /** Updates dropped for slow pages so far (each such page was then sent a snapshot). */
  get droppedUpdates(): number {
    return this.live.dropped
  }

  private get host(): ViewHost & { maxEntryChars: number } {
    const { transports, maxEntryChars } = this.config
    return { store: this.store, subagents: this.ctx.subagents, transports, maxEntryChars }
  }

  protected override async start(): Promise<void> {
    const { config } = this
    if (this.stopped) return
    // Stopped while it listened (cordis does not wait for a start): the server it got closes at once, in its turn.
    const http = await listenInTurn(config.host, config.port, async () => {
      const bound = await listen(config.host, config.port)
      if (!this.stopped) return bound
      bound.close()
    })
    if (!http) return
    this.http = http
    this.port = (http.address() as AddressInfo).port
    const hosts = config.allowedHosts?.length ? config.allowedHosts : defaultHosts(config.host, this.port)
    http.on('request', createHandler(this.host, this.live, {
      hosts: new Set(hosts.map((host) => host.toLowerCase())),
      origins: new Set(originsOf(hosts).map((origin) => origin.toLowerCase())),
      token: this.token,
      refused: this.refused,
    }, (error) => this.ctx.logger('console').warn('an answer from the page could not resume its run: %s', error)))
    this.baseUrl = `http://${hostForUrl(config.host)}:${this.port}/`
    this.url = `${this.baseUrl}#token=${this.token}`
    this.ctx.logger('console').info('serving the delegation view at %s (token %s)', this.baseUrl, config.token ? 'configured' : 'generated for this start')
    this.ctx.set('subagentConsole', this)
  }

  protected override async stop(): Promise<void> {
    this.stopped = true
    this.release()
    const http = this.http
    this.http = undefined
    this.live.close()
    if (http) {
      http.close()
      http.closeAllConnections()
    }
    this.url = ''
    this.baseUrl = ''
  }
}

function listen(host: string, port: number): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const http = createServer({ requestTimeout: 30_000, headersTimeout: 15_000 })
    http.once('error', (error: NodeJS.ErrnoException) => {
      reject(new ConsoleError('LISTEN_FAILED', `console: could not listen on ${host}:${port} (${error.code ?? error.message}); choose another port or host.`))
    })
    http.listen(port, host, () => resolve(http))
  })
}
