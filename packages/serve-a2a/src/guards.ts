// The Host/Origin guards are shared with the other loopback servers (packages/shared host-guards).
export { defaultHosts, isLoopback, originsOf, urlHost } from '@cordis-subagents/shared'

/**
 * Requests per minute per credential, over a sliding minute estimated from two fixed windows
 * (the previous minute's count weighted by how much of it still overlaps). Memory: two counts
 * per credential; credentials are a fixed, configured set.
 */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; current: number; previous: number }>()

  constructor(private readonly perMinute: number, private readonly now: () => number = Date.now) {}

  /** Counts a request of `scope`; false when it is over the limit (the refused request is not counted). */
  take(scope: string): boolean {
    const now = this.now()
    let window = this.windows.get(scope)
    if (!window) this.windows.set(scope, window = { start: now, current: 0, previous: 0 })
    const elapsed = now - window.start
    if (elapsed >= 120_000) Object.assign(window, { start: now, current: 0, previous: 0 })
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
