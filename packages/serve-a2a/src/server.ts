import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Context, Service } from 'cordis'
import type { Agent } from '@cordis-subagents/agent'
import type { TraceContextHeaders } from '@cordis-subagents/shared'
import type { ServerCallContext } from '@a2a-js/sdk/server'
import { Credentials } from './auth.js'
import { agentCard, CARD_PATH } from './card.js'
import { cardSigner, type CardSigner } from './card-signing.js'
import { Config } from './config.js'
import { checked, sharedUrlOf } from './config-checks.js'
import { ServeA2aError } from './errors.js'
import { AgentTaskExecutor } from './executor.js'
import { defaultHosts, originsOf, RateLimiter, Subscriptions, TaskSlots, urlHost } from './guards.js'
import { duplicateLoadMessage, listenInTurn, takeServiceSlot, withoutCallerTracing } from '@cordis-subagents/shared'
import { appMaker } from './http.js'
import { ServerLogs } from './logs.js'
import type { GuardedPushSender } from './push-sender.js'
import type { CappedPushStore } from './push-store.js'
import type { SharedState, SharedStateOptions } from './shared-state.js'
import { BoundedTaskStore, type ServeTaskStore } from './task-store.js'
import { listen, pushParts } from './start-parts.js'

declare module 'cordis' {
  interface Context {
    a2aServer: A2aServer
  }
}

/** How long a stop waits for responses in flight (a final task state on a stream) before it cuts them. */
const STOP_DRAIN_MS = 2_000

type TelemetryLike = { continueTrace(agent: Agent, context: TraceContextHeaders | undefined): boolean }

/**
 * `ctx.a2aServer`: serves an agent of `ctx.agents` over A2A (JSON-RPC over HTTP, protocol 1.0
 * and 0.3) while the plugin is loaded. Loopback, a credential on every JSON-RPC call, Host and
 * Origin checked, tasks scoped per credential, evicted and capped (README: Security model).
 * Once it listens, `url`, `cardUrl` and (when generated) `token` tell a client where and how.
 */
export class A2aServer extends Service<Config> {
  static inject = { agents: { required: true }, tools: { required: true }, telemetry: { required: false } }
  static Config = Config
  /** Each load is its own instance, stopped with its own entry; a second live load of an app is refused (DUPLICATE_LOAD). */
  static reusable = true

  /** The base URL clients use (`publicUrl`, else the bound address); empty until it listens. */
  url = ''
  /** The agent card's URL. */
  cardUrl = ''
  /** The bound port. */
  port = 0
  /** The token generated for this start (no token configured), else undefined. Never logged. */
  readonly token?: string
  /** How many credentials are accepted (values are never exposed). */
  readonly credentialCount: number
  /** With `signing`: the public key the card's signature verifies with (a JWK with `kid` and `alg`), for a client's `cardKey`. */
  readonly cardPublicJwk?: Record<string, unknown>

  private readonly signer?: CardSigner

  private readonly credentials: Credentials
  private executor?: AgentTaskExecutor
  private store?: ServeTaskStore
  /** The connection URL of the shared store (`shared.url` / `shared.urlFromEnv`), read at load. */
  private readonly sharedUrl?: string
  private shared?: SharedState
  private http?: Server
  private readonly refused = new Map<string, number>()
  private drained?: (ms: number) => Promise<void>
  private readonly pushStats = new Map<string, number>()
  private pushSender?: GuardedPushSender
  private pushStore?: CappedPushStore
  /** The lines a client can make this server log (the A2A SDK's console, push failures), under budgets; closed by `stop`. */
  private logs?: ServerLogs
  /** From the start of a stop: new requests are refused (HOST_STOPPING). */
  private stopping = false
  /** Set by `stop`. cordis runs a start it scheduled even after the stop (a load disposed at once): that start leaves nothing open. */
  private stopped = false
  /** Aborted by `stop`: a start still opening the shared state gives up, and what it opened is ended. */
  private readonly overtaking = new AbortController()
  /** Frees this app's a2aServer slot for the next load. */
  private readonly release: () => void

  constructor(ctx: Context, config?: Partial<Config>) {
    // Checked before `super`: a Service registers its start at construction, and a refused config must not reach it.
    const valid = checked(Config((config ?? {}) as Config))
    const { credentials, generated } = Credentials.fromConfig(valid, process.env)
    const sharedUrl = sharedUrlOf(valid, process.env)
    const signer = cardSigner(valid.signing, process.env)
    const slot = takeServiceSlot(ctx, 'a2aServer', `${hostForUrl(valid.host)}:${valid.port || '<a free port>'}`)
    if ('holder' in slot) throw new ServeA2aError('DUPLICATE_LOAD', duplicateLoadMessage('serve-a2a', 'a2aServer', slot.holder))
    // Set by `start` once it listens, not by cordis: cordis sets a service after any start, even one a reload overtook.
    super(ctx, 'a2aServer', true)
    delete (this as { [Context.expose]?: string })[Context.expose]
    this.release = slot.release
    this.signer = signer
    this.cardPublicJwk = signer?.publicJwk
    this.config = valid
    this.credentials = credentials
    this.token = generated
    this.credentialCount = credentials.count
    this.sharedUrl = sharedUrl
  }

  /** This host's lease id in the shared store (`<hostName>#<8 hex>`), when `shared` is configured and it runs. */
  get sharedHostId(): string | undefined {
    return this.shared?.hostId
  }

  /** Tasks kept for GetTask / ListTasks now (all credentials). */
  get storedTasks(): number {
    return this.store?.size ?? 0
  }

  /** Tasks running now. */
  get runningTasks(): number {
    return this.executor?.runningCount ?? 0
  }

  /** Tasks waiting for an answer now (their agent asked: input-required). */
  get parkedTasks(): number {
    return this.executor?.parkedCount ?? 0
  }

  /** Tasks with webhooks kept now (at most `maxStoredTasks` besides running ones; a task's webhooks go with it). */
  get webhookTasks(): number {
    return this.pushStore?.size ?? 0
  }

  /** Push notifications so far, by outcome: `delivered`, or a failure code (PUSH_TARGET_REFUSED, PUSH_FAILED, ...). */
  get pushNotifications(): Record<string, number> {
    return Object.fromEntries(this.pushStats)
  }

  /** Resolves once the push notifications queued now were delivered or given up. */
  async pushIdle(): Promise<void> {
    await this.pushSender?.idle()
  }

  /** Requests refused so far, by code (UNAUTHENTICATED, FORBIDDEN_HOST, ...). */
  get refusals(): Record<string, number> {
    return Object.fromEntries(this.refused)
  }

  protected override async start(): Promise<void> {
    const { config } = this
    const overtaken = () => this.stopped
    if (overtaken()) return
    const logger = this.ctx.logger('a2a-server')
    const logs = this.logs = new ServerLogs(logger)
    const slots = new TaskSlots(config.maxConcurrentTasks, config.maxTasksPerCredential ?? config.maxConcurrentTasks)
    type CancelParams = { tenant: string; id: string; metadata: undefined }
    type Canceller = { cancelTask(params: CancelParams, context: ServerCallContext): Promise<unknown> }
    let handler: Canceller | undefined
    let shared: SharedState | undefined
    try {
      shared = this.sharedUrl ? await openShared(config, this.sharedUrl, logger, this.overtaking.signal) : undefined
    } catch (error) {
      // A start overtaken by a stop (a reload, an unload) fails no one: the load that follows is the live one.
      if (overtaken()) return
      throw error
    }
    if (overtaken()) return void await shared?.close()
    this.shared = shared
    // Every host of a store files a token's tasks under the same scope, wherever the token is in its list.
    if (shared) this.credentials.useScopeKey(shared.scopeKey)
    const executor = this.executor = new AgentTaskExecutor({
      // The services themselves, not cordis' tracing proxies (an Error and a shadow context per access); both are
      // required injects, so a change of either restarts this service.
      agents: withoutCallerTracing(this.ctx.agents),
      tools: withoutCallerTracing(this.ctx.tools),
      telemetry: () => telemetryOf(this.ctx),
      slots,
      config,
      log: logger,
      cancelTask: (id, context) => handler!.cancelTask({ tenant: context.tenant ?? '', id, metadata: undefined }, context),
      // Shared: the buses say which tasks run (or are parked) on this host; each turn is saved for the other hosts.
      ...shared ? {
        buses: shared.buses, turns: shared.turns, warn: (format: string, ...args: unknown[]) => void logger.warn(format, ...args),
      } : {},
    })
    let push: Awaited<ReturnType<typeof pushParts>> | undefined
    const isRunning = (key: string) => executor.isRunning(key)
    const store = this.store = shared?.store ?? new BoundedTaskStore({
      max: config.maxStoredTasks, ttl: config.taskTtl, maxHistoryBytes: config.maxHistoryBytes, isRunning,
      forgotten: (key) => push?.store.forget(key),
    })
    // The shared state sweeps the shared store itself (with its lease timers).
    const sweeper = shared ? () => {} : this.ctx.setInterval(() => store.sweep(), Math.min(config.taskTtl, 60_000))
    // What a start that does not serve leaves: nothing (a stop overtaking it has closed what it found, or closes it).
    const undo = async () => {
      sweeper()
      push?.sender.stop()
      logs.close()
      this.shared = undefined
      await shared?.close()
    }
    let http: Server | undefined
    let served: { base: string; drained: (ms: number) => Promise<void> } | undefined
    try {
      // Whatever waits is done before the port is bound; what needs the bound port (the card's URL, the accepted Hosts) is
      // made as it is bound, before a request is read, so the port takes no request it cannot answer.
      const [{ TaskRequestHandler }, makeApp, parts] = await Promise.all([import('./task-handler.js'), appMaker(),
        config.push.enabled ? pushParts(config, logger, logs, this.pushStats, isRunning) : undefined])
      push = parts
      if (overtaken()) return void await undo()
      const serve = (port: number) => {
        const base = config.publicUrl ? config.publicUrl.replace(/\/+$/, '') : `http://${hostForUrl(config.host)}:${port}`
        const publicUrl = config.publicUrl ? new URL(config.publicUrl) : undefined
        const hosts = config.allowedHosts?.length
          ? config.allowedHosts
          : [...defaultHosts(config.host, port), ...publicUrl ? [urlHost(publicUrl)] : []]
        const origins = config.allowedOrigins?.length
          ? config.allowedOrigins
          : [...originsOf(hosts), ...publicUrl ? [publicUrl.origin] : []]
        const card = agentCard(config, base)
        const extras = { signCard: this.signer?.sign, push }
        const requestHandler = handler = shared
          ? shared.handlerFor(card, executor, config.maxFollowUpsPerTask, extras)
          : new TaskRequestHandler(card, store, executor, executor.buses, config.maxFollowUpsPerTask, extras)
        const { app, drained } = makeApp({
          credentials: this.credentials,
          hosts: new Set(hosts.map((host) => host.toLowerCase())),
          origins: new Set(origins.map((origin) => origin.toLowerCase())),
          rate: new RateLimiter(config.rateLimit),
          slots,
          subscriptions: new Subscriptions({
            total: config.maxSubscriptions, perCredential: config.maxSubscriptionsPerCredential, perTask: config.maxSubscriptionsPerTask,
          }),
          maxBodyBytes: config.maxBodyBytes,
          requestHandler,
          refused: this.refused,
          stopping: () => this.stopping,
        })
        served = { base, drained }
        return app
      }
      // What the SDK's server writes on the console goes to our logger, under a budget, from before the first request.
      logs.open()
      // Stopped while it listened (the stop closed the shared state it found): the server it got closes at once, in its turn.
      http = await listenInTurn(config.host, config.port, async () => {
        const bound = await listen(config, serve)
        if (!overtaken()) return bound
        bound.close()
      })
    } catch (error) {
      await undo()
      // Overtaken by a stop (a reload, an unload): the load that follows is the live one.
      if (overtaken()) return
      throw error
    }
    if (!http || !served) return void await undo()
    this.http = http
    this.port = (http.address() as AddressInfo).port
    this.pushSender = push?.sender
    this.pushStore = push?.store
    this.drained = served.drained
    const base = this.url = served.base
    this.cardUrl = `${base}${CARD_PATH}`
    if (config.auth === 'none') {
      logger.warn('serving %s WITHOUT authentication (auth: none): any process on this machine can run tasks', this.url)
    } else {
      // Behind a proxy (publicUrl) the bound address is said too: the proxy's upstream.
      const bound = `http://${hostForUrl(config.host)}:${this.port}`
      logger.info('serving %s%s (auth: %s, %d credential%s%s)', this.url, base === bound ? '' : ` from ${bound}`, config.auth,
        this.credentialCount, this.credentialCount === 1 ? '' : 's', this.token ? ', generated for this start' : '')
    }
    if (shared && this.token) logger.warn('shared: the token of this host was generated for this start, so no other host accepts it; give every host the same tokens (tokensFromEnv)')
    this.ctx.on('dispose', () => sweeper())
    this.ctx.set('a2aServer', this)
  }

  protected override async stop(): Promise<void> {
    this.stopped = true
    this.release()
    this.overtaking.abort()
    const http = this.http
    this.http = undefined
    if (http) {
      this.stopping = true
      // No new connections. The open ones are not cut yet (Node's close() would cut the idle
      // ones): a request already on its way over one is answered 503 HOST_STOPPING, so its client
      // knows it was not run and may send it elsewhere, instead of a closed socket it cannot read.
      const closeIdle = http.closeIdleConnections
      http.closeIdleConnections = () => {}
      try {
        http.close()
      } finally {
        http.closeIdleConnections = closeIdle
      }
    }
    // Running tasks end (aborted) and their streams get their final state before the sockets go; so do their webhooks
    // (what is still being delivered by then is cut, and nothing more is sent).
    await this.executor?.stop()
    await Promise.all([this.drained?.(STOP_DRAIN_MS), this.pushSender?.idle(STOP_DRAIN_MS)])
    this.pushSender?.stop()
    http?.closeAllConnections()
    await this.store?.clear()
    this.pushStore?.clear()
    await this.shared?.close()
    this.shared = undefined
    // The SDK's console is ours no more; what the budgets counted is summarised.
    this.logs?.close()
    this.url = ''
    this.cardUrl = ''
    this.stopping = false
  }
}

async function openShared(config: Config, url: string, log: SharedStateOptions['log'], signal: AbortSignal): Promise<SharedState> {
  const { SharedState } = await import('./shared-state.js')
  return SharedState.open({
    config: config.shared!, url, maxStoredTasks: config.maxStoredTasks, taskTtl: config.taskTtl, maxHistoryBytes: config.maxHistoryBytes,
    parkedTimeout: config.parkedTimeout, log,
  }, signal)
}

function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}

function telemetryOf(ctx: Context): TelemetryLike | undefined {
  const telemetry = (ctx as unknown as { get(name: string): unknown }).get('telemetry') as Partial<TelemetryLike> | undefined
  return typeof telemetry?.continueTrace === 'function' ? telemetry as TelemetryLike : undefined
}
