// The Host/Origin guards are shared with the other loopback servers (packages/shared host-guards).
export { defaultHosts, originsOf, urlHost } from '@cordis-subagents/shared'

/**
 * Requests per minute per credential, over a sliding minute estimated from two fixed windows
 * (the previous minute's count weighted by how much of it still overlaps). Memory: two counts
 * per credential; credentials are a fixed, configured set. The minute is measured on the monotonic
 * clock, so a step of the wall clock neither ends it early nor stretches it; a clock given to it that
 * goes back starts a new window.
 */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; current: number; previous: number }>()

  constructor(private readonly perMinute: number, private readonly now: () => number = () => performance.now()) {}

  /** Counts a request of `scope`; false when it is over the limit (the refused request is not counted). */
  take(scope: string): boolean {
    const now = this.now()
    let window = this.windows.get(scope)
    if (!window) this.windows.set(scope, window = { start: now, current: 0, previous: 0 })
    const elapsed = now - window.start
    if (elapsed < 0 || elapsed >= 120_000) Object.assign(window, { start: now, current: 0, previous: 0 })
    else if (elapsed >= 60_000) Object.assign(window, { start: window.start + 60_000, previous: window.current, current: 0 })
    const overlap = 1 - (now - window.start) / 60_000
    if (window.current + window.previous * overlap >= this.perMinute) return false
    window.current++
    return true
  }
}

/** One running task's hold on the concurrency limits; `release` is idempotent. */
export interface Slot {
  readonly scope: string
  release(): void
}

/** Tasks running at once: in total and per credential. */
export class TaskSlots {
  private total = 0
  private readonly perScope = new Map<string, number>()

  constructor(private readonly maxTotal: number, private readonly maxPerScope: number) {}

  get running(): number {
    return this.total
  }

  /** A slot for `scope`, or which limit is full. */
  take(scope: string): Slot | { full: 'server' | 'credential'; limit: number } {
    const mine = this.perScope.get(scope) ?? 0
    if (this.total >= this.maxTotal) return { full: 'server', limit: this.maxTotal }
    if (mine >= this.maxPerScope) return { full: 'credential', limit: this.maxPerScope }
    this.total++
    this.perScope.set(scope, mine + 1)
    let held = true
    return {
      scope,
      release: () => {
        if (!held) return
        held = false
        this.total--
        const left = (this.perScope.get(scope) ?? 1) - 1
        if (left) this.perScope.set(scope, left)
        else this.perScope.delete(scope)
      },
    }
  }
}

/** Which limit a refused subscription hit. */
export type SubscriptionLimit = { full: 'server' | 'credential' | 'task'; limit: number }

/**
 * Open task subscriptions (SubscribeToTask streams): in total, per credential and per task. Each
 * may stay open as long as its task waits, so they are counted while open; memory is one count per
 * credential and per task with a subscription open (at most `maxTotal` entries each).
 */
export class Subscriptions {
  private total = 0
  private readonly perScope = new Map<string, number>()
  private readonly perTask = new Map<string, number>()

  constructor(private readonly limits: { total: number; perCredential: number; perTask: number }) {}

  get open(): number {
    return this.total
  }

  /** A release for one more subscription of `scope` on `task` (a key that includes the scope), or which limit is full. */
  take(scope: string, task: string): (() => void) | SubscriptionLimit {
    const { total, perCredential, perTask } = this.limits
    if (this.total >= total) return { full: 'server', limit: total }
    if ((this.perScope.get(scope) ?? 0) >= perCredential) return { full: 'credential', limit: perCredential }
    if ((this.perTask.get(task) ?? 0) >= perTask) return { full: 'task', limit: perTask }
    this.total++
    bump(this.perScope, scope, 1)
    bump(this.perTask, task, 1)
    let held = true
    return () => {
      if (!held) return
      held = false
      this.total--
      bump(this.perScope, scope, -1)
      bump(this.perTask, task, -1)
    }
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const value = (counts.get(key) ?? 0) + by
  if (value > 0) counts.set(key, value)
  else counts.delete(key)
}
