import type { AgentCard } from '@a2a-js/sdk'
import type { AgentExecutor } from '@a2a-js/sdk/server'
import postgres from 'postgres'
import type { SharedConfig } from './config.js'
import { ServeA2aError } from './errors.js'
import { digestOfLease } from './feed-payloads.js'
import { HostLease } from './host-lease.js'
import { LocalBuses } from './local-buses.js'
import { SharedRequestHandler, type TakeOver } from './shared-handler.js'
import { ensureTables, namesOf, readScopeKey } from './shared-schema.js'
import { keyOfRef, PostgresTaskStore, refOf } from './shared-store.js'
import { PostgresTurns } from './saved-turns.js'
import { TaskFeed } from './task-feed.js'
import type { HandlerExtras } from './task-handler.js'

/** A query that does not answer in this long fails (a stuck database must not hold a request forever). */
const STATEMENT_TIMEOUT_MS = 10_000
/** Connecting at start gives up after this long (seconds, the client's unit). */
const CONNECT_TIMEOUT_S = 10

export interface SharedStateOptions {
  config: SharedConfig
  /** The connection URL (from `url` or `urlFromEnv`, read at load). */
  url: string
  maxStoredTasks: number
  taskTtl: number
  /** The server's `maxHistoryBytes`: each saved task's history is trimmed to it. */
  maxHistoryBytes: number
  /** The server's `parkedTimeout`: a waiting task whose host died is canceled this long after its last update. */
  parkedTimeout: number
  log: { info(format: string, ...args: unknown[]): void; warn(format: string, ...args: unknown[]): void }
}

/**
 * Shared task state of one host: the PostgreSQL store and saved turns, this host's lease and
 * liveness lock, the LISTEN/NOTIFY feed and the request handler that answers for (and takes over)
 * other hosts' tasks. Timers: the lease is renewed every third of `leaseMs`; every half of it, the
 * unfinished tasks of gone leases are interrupted (or failed, or expired) and the store is swept
 * (a few indexed statements).
 */
export class SharedState {
  readonly buses = new LocalBuses()
  readonly store: PostgresTaskStore
  /** The saved turns (the executor saves each turn's start and each park through it). */
  readonly turns: PostgresTurns
  private readonly lease: HostLease
  private readonly feed: TaskFeed
  private handler?: SharedRequestHandler
  private readonly timers: NodeJS.Timeout[] = []
  private readonly busy = new Map<string, Promise<void>>()
  private closed = false
  private executor?: AgentExecutor & TakeOver
  /** The store's key for naming credential scopes (the same on every host of the store). */
  scopeKey: Buffer = Buffer.alloc(0)

  private constructor(
    private readonly sql: postgres.Sql, private readonly lock: postgres.Sql, private readonly options: SharedStateOptions,
  ) {
    const names = namesOf(options.config.schema)
    this.lease = new HostLease(sql, lock, names, options.config.hostName, options.config.leaseMs)
    this.store = new PostgresTaskStore(sql, {
      names, max: options.maxStoredTasks, ttl: options.taskTtl, maxHistoryBytes: options.maxHistoryBytes, hostId: () => this.lease.id,
    })
    this.turns = new PostgresTurns(sql, names, () => this.lease.id, options.log.warn.bind(options.log))
    // A follower re-reads its task at least every lease, whatever the notifications do.
    this.feed = new TaskFeed(sql, names, (digest) => void this.cancelHere(digest), options.config.leaseMs,
      (digest, by) => this.movedAway(digest, by))
  }

  /**
   * Connects, creates the tables when missing, takes a lease and listens; a failure closes what was opened. `signal`
   * (the server stopped while this opens): the connections are ended at once, and this fails.
   */
  static async open(options: SharedStateOptions, signal?: AbortSignal): Promise<SharedState> {
    const sql = postgres(options.url, {
      max: options.config.poolSize,
      connect_timeout: CONNECT_TIMEOUT_S,
      idle_timeout: 60,
      onnotice: () => {},
      connection: { statement_timeout: STATEMENT_TIMEOUT_MS, application_name: `serve-a2a ${options.config.hostName}` },
    })
    // The session holding this host's liveness lock: never recycled (that would drop the lock).
    const lock = postgres(options.url, {
      max: 1,
      connect_timeout: CONNECT_TIMEOUT_S,
      max_lifetime: 0,
      onnotice: () => {},
      connection: { statement_timeout: STATEMENT_TIMEOUT_MS, application_name: `serve-a2a ${options.config.hostName} lock` },
    })
    const state = new SharedState(sql, lock, options)
    // A database that never answers would hold both clients until their connect timeout.
    const abandon = () => void Promise.all([sql.end({ timeout: 0 }), lock.end({ timeout: 0 })]).catch(() => {})
    signal?.addEventListener('abort', abandon, { once: true })
    try {
      signal?.throwIfAborted()
      await ensureTables(sql, namesOf(options.config.schema))
      const { key, legacy } = await readScopeKey(sql, namesOf(options.config.schema))
      state.scopeKey = key
      if (legacy) options.log.warn('shared: %d task(s) were filed by an older version under list positions (credential-<n>); no credential reaches them now, and taskTtl evicts them', legacy)
      await state.lease.register()
      await state.feed.start()
      await state.store.sweep()
    } catch (error) {
      await sql.end({ timeout: 1 }).catch(() => {})
      await lock.end({ timeout: 1 }).catch(() => {})
      throw new ServeA2aError('STORE_UNAVAILABLE', `shared: PostgreSQL is not usable at ${redactUrl(options.url)} (${(error as Error).message}). Start it, check the URL and the role's rights (it creates schema "${options.config.schema}" and its tables), or remove \`shared\` to keep tasks in this process.`)
    } finally {
      signal?.removeEventListener('abort', abandon)
    }
    if (signal?.aborted) {
      await state.close()
      throw new ServeA2aError('STORE_UNAVAILABLE', 'shared: the server stopped while it connected to PostgreSQL.')
    }
    state.every(options.config.leaseMs / 3, 'renew', () => state.renew())
    state.every(options.config.leaseMs / 2, 'reap', () => state.reap())
    return state
  }

  get hostId(): string {
    return this.lease.id
  }

  /** The request handler of this host (it runs `executor`'s tasks, and answers for other hosts'). */
  handlerFor(
    card: AgentCard, executor: AgentExecutor & TakeOver, maxFollowUpsPerTask: number, extras: HandlerExtras = {},
  ): SharedRequestHandler {
    this.executor = executor
    return this.handler = new SharedRequestHandler(card, executor, maxFollowUpsPerTask, {
      store: this.store, buses: this.buses, feed: this.feed, cancelWaitMs: this.options.config.cancelWaitMs,
      turns: this.turns, executor,
      actForGone: async (ref) => void await this.lease.reap(this.options.parkedTimeout, ref),
    }, extras)
  }

  /** Stops the timers and the feed, ends the lease (its waiting tasks stay for any host) and closes the pool and the lock's session. */
  async close(): Promise<void> {
    this.closed = true
    for (const timer of this.timers.splice(0)) clearInterval(timer)
    await Promise.all(this.busy.values())
    await this.feed.stop()
    await this.lease.release().catch(() => {})
    await this.sql.end({ timeout: 2 }).catch(() => {})
    await this.lock.end({ timeout: 2 }).catch(() => {})
  }

  private every(ms: number, name: string, job: () => Promise<void>): void {
    const timer = setInterval(() => {
      if (this.busy.has(name) || this.closed) return
      this.busy.set(name, job().catch((error: Error) => {
        if (!this.closed) this.options.log.warn('shared state: %s failed: %s', name, error.message)
      }).finally(() => this.busy.delete(name)))
    }, Math.max(100, Math.floor(ms)))
    timer.unref()
    this.timers.push(timer)
  }

  /**
   * Renews the lease. A lost one (expired before renewal: the database or this process stalled)
   * fails this host's unfinished tasks as any reaper would (HOST_LOST, never "canceled"), stops
   * their runs here, and only then takes a new lease, so nothing of the old one is saved under it.
   */
  private async renew(): Promise<void> {
    if (await this.lease.renew() || this.closed) return
    if (await this.lease.revive()) return this.reconcile()
    const lost = this.lease.id
    this.options.log.warn('shared state: the lease %s was lost (it expired before it was renewed, or its lock\'s session broke: the database or this process stalled); its tasks are interrupted and their runs stopped here', lost)
    await this.lease.reap(this.options.parkedTimeout)
    // The new lease first: the ends of the runs stopped below are saved under it, so the rows of the
    // old lease's tasks (interrupted or failed by the reap) refuse them.
    await this.lease.renewLost()
    for (const key of this.buses.keys()) {
      const local = this.buses.get(key)
      const bus = local && this.buses.getByTaskId(local.taskId, local.context)
      if (bus) await this.executor?.cancelTask(local.taskId, bus)
    }
  }

  /**
   * After a pause past the lease (revived, same id): each task here that another host continued, or
   * that ended meanwhile, stops here; the others go on, so a turn that completes keeps its answer.
   */
  private async reconcile(): Promise<void> {
    this.options.log.warn('shared state: the lease %s ran out while this host was paused, and is renewed; its tasks no other host took go on here', this.lease.id)
    for (const key of this.buses.keys()) {
      const local = this.buses.get(key)
      const bus = local && this.buses.getByTaskId(local.taskId, local.context)
      if (bus && !await this.lease.keep(refOf(local.context, local.taskId))) await this.executor?.cancelTask(local.taskId, bus)
    }
  }

  private async reap(): Promise<void> {
    const reaped = await this.lease.reap(this.options.parkedTimeout)
    if (reaped) this.options.log.info('shared state: %d task(s) of lost hosts interrupted, failed or expired', reaped)
    const orphans = await this.lease.reapOwn((ref) => this.buses.has(keyOfRef(ref)))
    if (orphans) this.options.log.warn('shared state: %d task(s) of this host ended without their final state saved; marked failed', orphans)
    await this.store.sweep()
  }

  /**
   * Another host claimed a task (named by its digest, as is the claiming lease): if it waited here,
   * its agent here is let go (the task goes on there). A parked task keeps its bus, so it is among the buses.
   */
  private movedAway(digest: string, byLease: string): void {
    if (byLease === digestOfLease(this.lease.id)) return
    const local = this.buses.byDigest(digest)
    if (local) this.executor?.release(local.key, local.taskId, local.context)
  }

  /** A cancel another host forwarded (the task's digest): acted on only when the task runs here. */
  private async cancelHere(digest: string): Promise<void> {
    const local = this.buses.byDigest(digest)
    if (local) await this.cancelLocal(local.taskId, local.context)
  }

  private async cancelLocal(taskId: string, context: Parameters<SharedRequestHandler['cancelTask']>[1] | undefined): Promise<void> {
    if (!this.handler || !context) return
    await this.handler.cancelTask({ tenant: context.tenant ?? '', id: taskId, metadata: undefined }, context).catch(() => {})
  }
}

/** The URL without its password, for messages. */
function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@')
}
