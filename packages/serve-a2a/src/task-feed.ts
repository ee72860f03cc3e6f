import type postgres from 'postgres'
import type { SharedNames } from './shared-schema.js'
import { keyOfRef, type TaskRef } from './shared-store.js'

type Sql = postgres.Sql
type ListenMeta = postgres.ListenMeta

/** Longest notification payload read (PostgreSQL caps them at 8000 bytes; ours are a few hundred). */
const MAX_PAYLOAD = 8000
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
 * process. A ping says only "this task changed": watchers read the task itself.
 */
export class TaskFeed {
  private readonly watchers = new Map<string, Set<Watcher>>()
  private readonly listening: Array<{ unlisten(): Promise<void> }> = []
  private closed = false

  constructor(
    private readonly sql: Sql, private readonly names: SharedNames, private readonly onCancel: (ref: TaskRef) => void,
    private readonly recheckMs: number, private readonly onMoved: (ref: TaskRef, by: string) => void = () => {},
  ) {}

  get watching(): number {
    let count = 0
    for (const set of this.watchers.values()) count += set.size
    return count
  }

  async start(): Promise<void> {
    this.listening.push(await this.sql.listen(this.names.taskChannel, (payload) => this.ping(payload)) as ListenMeta)
    this.listening.push(await this.sql.listen(this.names.cancelChannel, (payload) => {
      const ref = parseRef(payload)
      if (ref) this.onCancel(ref)
    }) as ListenMeta)
    this.listening.push(await this.sql.listen(this.names.movedChannel, (payload) => {
      // `<claiming lease id> <key JSON>`
      const space = payload.indexOf(' ')
      const ref = space > 0 ? parseRef(payload.slice(space + 1)) : undefined
      if (ref) this.onMoved(ref, payload.slice(0, space))
    }) as ListenMeta)
  }

  /** Watches a task's changes; undefined when this host already has MAX_WATCHERS. */
  watch(ref: TaskRef): TaskWatch | undefined {
    if (this.closed || this.watching >= MAX_WATCHERS) return undefined
    const key = keyOfRef(ref)
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
    await this.sql`SELECT pg_notify(${this.names.cancelChannel}, ${JSON.stringify([ref.tenant, ref.scope, ref.id])})`
  }

  async stop(): Promise<void> {
    this.closed = true
    for (const set of [...this.watchers.values()]) for (const watcher of [...set]) watcher.close()
    await Promise.all(this.listening.splice(0).map((listen) => listen.unlisten().catch(() => {})))
  }

  private ping(payload: string): void {
    const space = payload.indexOf(' ')
    const ref = space > 0 ? parseRef(payload.slice(space + 1)) : undefined
    if (!ref) return
    for (const watcher of this.watchers.get(keyOfRef(ref)) ?? []) watcher.wake()
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

function parseRef(text: string): TaskRef | undefined {
  if (text.length > MAX_PAYLOAD) return undefined
  try {
    const value = JSON.parse(text)
    if (Array.isArray(value) && value.length === 3 && value.every((part) => typeof part === 'string')) {
      return { tenant: value[0], scope: value[1], id: value[2] }
    }
  } catch {}
  return undefined
}
