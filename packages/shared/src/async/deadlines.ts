import { MAX_TIMER_MS } from '../vocabulary/numbers.js'

interface Entry {
  at: number
  fire: () => void
  prev?: Entry
  next?: Entry
}

/**
 * Deadlines of one fixed duration (say, every call of one tool load with a 30-minute timeout)
 * behind one timer. Entries are added in deadline order, so a doubly linked list keeps them
 * sorted: adding and cancelling are O(1), and the one timer is armed for the head. A cancelled
 * head leaves the timer armed; it fires at most once early and re-arms for the new head. When the
 * last entry goes the timer is unref'd, not cleared: an idle queue keeps no process alive, and the
 * next entry (one call after another) only refs it again instead of making and clearing a timer
 * each. Left alone it fires once, finds nothing and is gone; `close` clears it.
 */
export class DeadlineQueue {
  private head?: Entry
  private tail?: Entry
  private timer?: NodeJS.Timeout
  private timerAt = Infinity

  constructor(readonly ms: number) {}

  /** Calls `fire` once `ms` from now, unless the returned cancel runs first (idempotent). */
  add(fire: () => void): () => void {
    const entry: Entry = { at: performance.now() + this.ms, fire }
    if (this.tail) {
      this.tail.next = entry
      entry.prev = this.tail
      this.tail = entry
    } else {
      this.head = this.tail = entry
      this.arm()
    }
    return () => this.remove(entry)
  }

  /** Whether the queue holds a timer that keeps the process alive (it does exactly while entries wait). */
  get armed(): boolean {
    return this.timer?.hasRef() === true
  }

  /** Drops every entry unfired and clears the timer (its owner is going). */
  close(): void {
    for (let entry = this.head; entry;) {
      const next = entry.next
      entry.prev = entry.next = undefined
      entry = next
    }
    this.head = this.tail = undefined
    this.disarm()
  }

  /** Entries waiting (for tests and leak checks). */
  get size(): number {
    let n = 0
    for (let entry = this.head; entry; entry = entry.next) n++
    return n
  }

  private remove(entry: Entry): void {
    if (entry.prev === undefined && this.head !== entry) return // already removed or fired
    if (entry.prev) entry.prev.next = entry.next
    else this.head = entry.next
    if (entry.next) entry.next.prev = entry.prev
    else this.tail = entry.prev
    entry.prev = entry.next = undefined
    if (!this.head) this.timer?.unref()
  }

  private arm(): void {
    if (!this.head) return
    const at = this.head.at
    if (this.timer && this.timerAt <= at) {
      this.timer.ref()
      return
    }
    this.disarm()
    this.timerAt = at
    this.timer = setTimeout(this.expire, Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(at - performance.now()))))
  }

  private disarm(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.timerAt = Infinity
  }

  private readonly expire = (): void => {
    this.timer = undefined
    this.timerAt = Infinity
    const now = performance.now()
    while (this.head && this.head.at <= now) {
      const entry = this.head
      this.remove(entry)
      try {
        entry.fire()
      } catch (error) {
        process.nextTick(() => { throw error })
      }
    }
    this.arm()
  }
}
