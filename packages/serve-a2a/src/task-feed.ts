import type postgres from 'postgres'
import { digestOfRef, readPayload, taskPayload } from './feed-payloads.js'
import type { SharedNames } from './shared-schema.js'
import type { TaskRef } from './task-ref.js'

type Sql = postgres.Sql
type ListenMeta = postgres.ListenMeta

/** Watchers of one host at once (remote resubscribers and forwarded cancels); more are refused. */
const MAX_WATCHERS = 1024

/** One watcher: woken (coalesced) when its task changes, or closed. */
export interface TaskWatch {
  /**
   * Resolves with true at the next change after the last call (or after `recheckMs` without one:
   * a notification lost while the listening connection reconnected must not leave a follower
   * waiting forever), false once closed.
   */
  changed(): Promise<boolean>
  close(): void
}

/**
 * The event fan-out between hosts, over PostgreSQL LISTEN/NOTIFY (no other service): the store
 * notifies `taskChannel` when a task is saved (delivered on commit), a host forwards a cancel
 * on `cancelChannel`, and a host that claimed a waiting task says so on `movedChannel`. Each
 * host holds one listening connection and hands pings to the watchers of that task in this
 * process. A ping says only "this task changed": watchers read the task itself. Payloads are of
 * fixed size (see feed-payloads.ts): a task is named by the digest of its key, and each host looks
 * the digest up among the tasks it follows (here) or runs (`onCancel`, `onMoved`).
 */
export class TaskFeed {
  /** By task digest. */
  private readonly watchers = new Map<string, Set<Watcher>>()
  private readonly listening: Array<{ unlisten(): Promise<void> }> = []
  private closed = false

  constructor(
    private readonly sql: Sql, private readonly names: SharedNames, private readonly onCancel: (digest: string) => void,
    private readonly recheckMs: number, private readonly onMoved: (digest: string, byLease: string) => void = () => {},
  ) {}

  get watching(): number {
    let count = 0
    for (const set of this.watchers.values()) count += set.size
    return count
  }

  async start(): Promise<void> {
    this.listening.push(await this.sql.listen(this.names.taskChannel, (payload) => this.ping(payload)) as ListenMeta)
    this.listening.push(await this.sql.listen(this.names.cancelChannel, (payload) => {
      const [digest] = readPayload(payload, 1) ?? []
      if (digest) this.onCancel(digest)
    }) as ListenMeta)
    this.listening.push(await this.sql.listen(this.names.movedChannel, (payload) => {
      const [digest, byLease] = readPayload(payload, 2) ?? []
      if (digest && byLease) this.onMoved(digest, byLease)
    }) as ListenMeta)
  }

  /** Watches a task's changes; undefined when this host already has MAX_WATCHERS. */
  watch(ref: TaskRef): TaskWatch | undefined {
    if (this.closed || this.watching >= MAX_WATCHERS) return undefined
    const key = digestOfRef(ref)
    const watcher = new Watcher(this.recheckMs, () => {
      const set = this.watchers.get(key)
      set?.delete(watcher)
      if (set && !set.size) this.watchers.delete(key)
    })
    let set = this.watchers.get(key)
    if (!set) this.watchers.set(key, set = new Set())
    set.add(watcher)
    return watcher
  }

  /** Asks every host to cancel this task; the one running it does. */
  async requestCancel(ref: TaskRef): Promise<void> {
    await this.sql`SELECT pg_notify(${this.names.cancelChannel}, ${taskPayload(ref)})`
  }

  async stop(): Promise<void> {
    this.closed = true
    for (const set of [...this.watchers.values()]) for (const watcher of [...set]) watcher.close()
    await Promise.all(this.listening.splice(0).map((listen) => listen.unlisten().catch(() => {})))
  }

  private ping(payload: string): void {
    const [digest] = readPayload(payload, 1) ?? []
    for (const watcher of (digest && this.watchers.get(digest)) || []) watcher.wake()
  }
}

class Watcher implements TaskWatch {
  private pending = false
  private done = false
  private waiter?: (value: boolean) => void
  private timer?: NodeJS.Timeout

  constructor(private readonly recheckMs: number, private readonly detach: () => void) {}

  wake(): void {
    if (this.waiter) this.settle(true)
    else this.pending = true
  }

  changed(): Promise<boolean> {
    if (this.done) return Promise.resolve(false)
    if (this.pending) {
      this.pending = false
      return Promise.resolve(true)
    }
    return new Promise((resolve) => {
      this.waiter = resolve
      this.timer = setTimeout(() => this.settle(true), this.recheckMs)
    })
  }

  close(): void {
    if (this.done) return
    this.done = true
    this.detach()
    this.settle(false)
  }

  private settle(value: boolean): void {
    clearTimeout(this.timer)
    const resolve = this.waiter
    this.waiter = undefined
    resolve?.(value)
  }
}
