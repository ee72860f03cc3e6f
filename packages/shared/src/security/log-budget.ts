/**
 * A budget for log lines an outside party can trigger (a peer's junk, a flood of refused requests): per key, the first
 * `perWindow` lines of each window are written, the rest only counted and summarised in one line later.
 *
 * One rule for every site where a peer can make the host log: each line is kept to one line and `maxChars` characters per
 * string argument (cut first, then cleaned with `peerLine`, so a 4 MiB argument is never scanned whole); per key (a peer,
 * a session, a site) the first `perWindow` lines of a window pass, the rest are counted; the next line of that key after
 * its window ended, or `flush()`, first writes "N more lines like this were not logged (…)". All keys together pass at
 * most `totalPerWindow` lines a window (summaries included), so a peer that makes up keys is bounded too, and the key
 * table holds at most `maxKeys` keys (a new key forgets the one whose window started first, summarising its count).
 * Windows are read on the monotonic clock (`performance.now()`). No timers: a summary rides on the next line of its key,
 * on a line of another key once the table or the total is full, or on `flush()` (call it at a plugin's dispose).
 */
import { describeError, headChars } from '../vocabulary/text.js'
import { peerLine } from './peer-text.js'

/** Writes one log line, printf-style: a cordis `logger.warn`, `console.error`, or a recorder in a test. */
export type LogLine = (format: string, ...args: unknown[]) => void

export interface LogBudgetOptions {
  /** Lines each key may write per window (default 10). */
  perWindow?: number
  /** Lines all keys together may write per window, summaries of keys included (default 10 × `perWindow`). */
  totalPerWindow?: number
  /** Length of a window, in ms of the monotonic clock (default 60,000). */
  windowMs?: number
  /** Keys remembered at once (default 256); a new key past it forgets the key whose window started first. */
  maxKeys?: number
  /** Characters a string argument (and a key) keeps; a longer one is cut, with `…` (default 2,000). */
  maxChars?: number
  /** Names the budget in the summary of lines the total refused (default `log budget`). */
  name?: string
  /** The clock, in ms (default `performance.now()`, read at each line); a clock that goes back starts a new window. */
  now?: () => number
}

interface Window {
  start: number
  passed: number
  dropped: number
}

/**
 * Log lines under a budget: `log(key, format, ...args)` writes through `write` while `key` (and the total) has room in
 * its window, else counts the line; see the module comment for the rule.
 */
export class LogBudget {
  private readonly perWindow: number
  private readonly totalPerWindow: number
  private readonly windowMs: number
  private readonly maxKeys: number
  private readonly maxChars: number
  private readonly name: string
  private readonly now: () => number
  private readonly keys = new Map<string, Window>()
  /** The window of every key together. */
  private readonly total: Window = { start: Number.NaN, passed: 0, dropped: 0 }

  constructor(private readonly write: LogLine, options: LogBudgetOptions = {}) {
    this.perWindow = atLeast(options.perWindow, 10, 0)
    this.totalPerWindow = atLeast(options.totalPerWindow, this.perWindow * 10, 0)
    this.windowMs = atLeast(options.windowMs, 60_000, 1)
    this.maxKeys = atLeast(options.maxKeys, 256, 1)
    this.maxChars = atLeast(options.maxChars, 2_000, 1)
    this.name = peerLine(options.name ?? 'log budget')
    this.now = options.now ?? (() => performance.now())
  }

  /**
   * Writes `format` with `args` (each string and `Error` argument on one line and cut to `maxChars`; other values as
   * they are) when `key` and the total have room in their windows; else counts it. True when the line was written.
   */
  log(key: string, format: string, ...args: unknown[]): boolean {
    if (!this.admit(key)) return false
    this.writeClean(format, args)
    return true
  }

  /**
   * `log` for a line whose arguments cost something to make (a redaction): `render` is called only when the line is
   * written, and returns the format and the arguments.
   */
  logWith(key: string, render: () => readonly [format: string, ...args: unknown[]]): boolean {
    if (!this.admit(key)) return false
    const [format, ...args] = render()
    this.writeClean(format, args)
    return true
  }

  /**
   * Writes the summary of every key with lines counted and not yet summarised (and of the total's), now. Windows go
   * on: what a key passed this window still counts. Call it when the source of the lines goes away (a plugin's dispose).
   */
  flush(): void {
    this.rollTotal(this.now())
    for (const [key, entry] of this.keys) this.keySummary(key, entry)
    this.totalSummary()
  }

  /** Counts a line of `key`: true when it may be written (the key and the total have room), after any summary due. */
  private admit(key: string): boolean {
    const now = this.now()
    this.rollTotal(now)
    if (key.length > this.maxChars) key = headChars(key, this.maxChars, '…')
    let entry = this.keys.get(key)
    if (!entry) {
      if (this.keys.size >= this.maxKeys) this.forgetOldest()
      this.keys.set(key, entry = { start: now, passed: 0, dropped: 0 })
    } else if (this.ended(entry, now)) {
      this.keySummary(key, entry)
      restart(entry, now)
      // Map order is the order windows started: the oldest is the likeliest to have ended.
      this.keys.delete(key)
      this.keys.set(key, entry)
    }
    if (entry.passed >= this.perWindow) {
      entry.dropped++
      return false
    }
    if (!this.spend()) return false
    entry.passed++
    return true
  }

  private writeClean(format: string, args: unknown[]) {
    for (let i = 0; i < args.length; i++) args[i] = logArgument(args[i], this.maxChars)
    this.write(format, ...args)
  }

  /** Whether the window of `window` ended at `now` (or the clock went back, or it never started). */
  private ended(window: Window, now: number): boolean {
    return !(now - window.start < this.windowMs && now >= window.start)
  }

  /** A new window for the total once its window ended, after the summary of what it refused. */
  private rollTotal(now: number) {
    if (!this.ended(this.total, now)) return
    this.totalSummary()
    restart(this.total, now)
  }

  /** Room in the total for one more line: counts it and says yes, or counts it as dropped. */
  private spend(): boolean {
    if (this.total.passed >= this.totalPerWindow) {
      this.total.dropped++
      return false
    }
    this.total.passed++
    return true
  }

  private keySummary(key: string, entry: Window) {
    const dropped = entry.dropped
    if (!dropped) return
    entry.dropped = 0
    if (this.total.passed >= this.totalPerWindow) {
      this.total.dropped += dropped
      return
    }
    this.total.passed++
    this.write('%s', `${peerLine(key)}: ${dropped} more ${dropped === 1 ? 'line' : 'lines'} like this ${dropped === 1 ? 'was' : 'were'} `
      + `not logged (log budget: ${this.perWindow} per ${this.windowMs / 1000} s)`)
  }

  /** The one line over the total: never refused, at most one per window (and one per `flush`). */
  private totalSummary() {
    const dropped = this.total.dropped
    if (!dropped) return
    this.total.dropped = 0
    this.write('%s', `${this.name}: ${dropped} more ${dropped === 1 ? 'line was' : 'lines were'} not logged `
      + `(log budget: ${this.totalPerWindow} lines of all keys per ${this.windowMs / 1000} s)`)
  }

  private forgetOldest() {
    const [key, entry] = this.keys.entries().next().value!
    this.keys.delete(key)
    this.keySummary(key, entry)
  }
}

function restart(window: Window, now: number) {
  window.start = now
  window.passed = 0
  window.dropped = 0
}

/** One argument of a budgeted line: a string or an `Error` (its message) cut to `maxChars`, then put on one line. */
function logArgument(value: unknown, maxChars: number): unknown {
  if (typeof value === 'string') return peerLine(headChars(value, maxChars, '…'))
  if (value instanceof Error) return peerLine(headChars(describeError(value), maxChars, '…'))
  return value
}

function atLeast(value: number | undefined, fallback: number, min: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? Math.max(min, Math.floor(value)) : fallback
}
