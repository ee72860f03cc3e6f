import type { Context, Logger } from 'cordis'
import { describeError, emitIsolatedOn, hasListenersOn, headBytes, withoutCallerTracing } from '@cordis-subagents/shared'
import type { EventSink, SubagentEventHandlers, SubagentEventMap } from './events.js'
import type { LiveRun } from './run/delegation.js'
import type { BeginOptions, SubagentHandle, SubagentOutcome, SubagentRequest, SubagentRunInfo, SubagentStart } from './types.js'
import { MAX_KEPT_RESULT_BYTES, MAX_KEPT_RESULTS, type KeptResult, type ResultLimits } from './verbs/results.js'
import {
  type ContinuableEntry, type ContinuableRunInfo, type ContinueOptions, CONTINUE_WINDOW_MS, continueRun,
  MAX_CONTINUABLE_RUNS,
} from './verbs/continuation.js'

// After the run: the service's events (emitted by the run, isolated from their listeners) and the
// `subagent/end` listeners that keep what a run leaves behind: its outcome, re-readable by run id
// (`ResultBook`), and the run itself while it can be continued (`ContinuableRuns`). Reading a kept
// result (verbs/result-read.ts) and a continue (verbs/continuation.ts) are entered only when asked for.

type AnyHandler = (...args: unknown[]) => void

/**
 * Emits the service's events with every listener isolated: a listener that throws or rejects is
 * logged and never reaches the service (a consumer must not veto a registration or a run's end).
 */
export class SubagentEvents implements EventSink {
  /**
   * The app's lifecycle itself, read once: `ctx.lifecycle` is cordis' caller-tracing proxy, which
   * builds a shadow context on every read through it. Emitting binds nothing to a caller's scope.
   */
  private readonly lifecycle: Context['lifecycle']

  constructor(ctx: Context, private readonly log: Logger) {
    this.lifecycle = withoutCallerTracing(ctx.lifecycle)
  }

  /** Direct listeners by event (`observe`): called without cordis' per-call caller tracing. */
  private readonly direct = new Map<string, Set<AnyHandler>>()

  /** Whether event `name` has a listener now (so an emitter can skip building what nobody reads). */
  has(name: keyof SubagentEventMap): boolean {
    return this.direct.has(name) || hasListenersOn(this.lifecycle, name)
  }

  /**
   * Calls each handler as its event is emitted, after the cordis listeners, isolated like them.
   * For a consumer on the hot path (a tracer): a cordis listener goes through cordis' caller
   * tracing on every call (it builds a shadow context). Returns the unsubscribe.
   */
  observe(handlers: SubagentEventHandlers): () => void {
    const added: [string, AnyHandler][] = []
    for (const [name, handler] of Object.entries(handlers)) {
      if (typeof handler !== 'function') continue
      const set = this.direct.get(name) ?? new Set()
      set.add(handler as AnyHandler)
      this.direct.set(name, set)
      added.push([name, handler as AnyHandler])
    }
    return () => {
      for (const [name, handler] of added) {
        const set = this.direct.get(name)
        if (set?.delete(handler) && !set.size) this.direct.delete(name)
      }
    }
  }

  emit<K extends keyof SubagentEventMap>(name: K, ...args: SubagentEventMap[K]): void {
    const failed = (error: unknown) => this.log.warn('a listener of %s failed (ignored): %s', name, describeError(error))
    emitIsolatedOn(this.lifecycle, name, args, failed)
    const direct = this.direct.get(name)
    if (!direct) return
    // A live Set: a handler that unsubscribes (itself or another) while this runs is fine.
    for (const handler of direct) {
      try {
        handler(...args)
      } catch (error) {
        failed(error)
      }
    }
  }
}

interface KeptEntry {
  result: KeptResult
  bytes: number
}

/**
 * The outcomes of ended runs by run id, most recent last, bounded by count and bytes. It holds
 * copies of what runs already settled with: reading one never touches the run or its provider.
 * It also remembers (ids only, bounded) which runs it forgot, so a read of one says so.
 */
export class ResultBook {
  private readonly entries = new Map<string, KeptEntry>()
  /** Ids of results forgotten for room, oldest first (at most 4 × `maxResults`). */
  private readonly forgotten = new Set<string>()
  private bytes = 0

  constructor(readonly limits: ResultLimits = { maxResults: MAX_KEPT_RESULTS, maxBytes: MAX_KEPT_RESULT_BYTES }) {}

  /** @internal Keeps the outcome of every run `events` ends (a `subagent/end` listener of its own); returns the unsubscribe. */
  keepFrom(events: SubagentEvents): () => void {
    return events.observe({ 'subagent/end': (info, outcome) => this.record(info, outcome) })
  }

  /** Keeps the final outcome of run `info.runId` (a later one for the same run replaces it). */
  record(info: SubagentRunInfo, outcome: SubagentOutcome): void {
    const { maxResults, maxBytes } = this.limits
    if (maxResults < 1) return
    let output = outcome.output
    // The diagnostic counts too: the output is cut to what it leaves, so the new entry alone fits the bound.
    const diagnosticBytes = outcome.diagnostic === undefined ? 0 : Buffer.byteLength(outcome.diagnostic, 'utf8')
    const room = Math.max(0, maxBytes - diagnosticBytes)
    let bytes = Buffer.byteLength(output, 'utf8')
    const truncated = bytes > room
    if (truncated) {
      // A fresh copy of the head: a slice would keep the whole output alive behind it.
      output = Buffer.from(headBytes(output, room), 'utf8').toString('utf8')
      bytes = Buffer.byteLength(output, 'utf8')
    }
    const result: KeptResult = {
      runId: info.runId, provider: info.provider, parentId: info.parentId, stopReason: outcome.stopReason, status: outcome.status, output,
      work: { ...outcome.work }, endedAt: Date.now(), source: 'memory', truncated,
    }
    if (outcome.limit !== undefined) result.limit = outcome.limit
    if (info.label !== undefined) result.label = info.label
    if (outcome.value !== undefined && !truncated) {
      result.value = outcome.value
      // Counted like the output (its JSON), so the byte bound holds for values too.
      bytes *= 2
    }
    if (outcome.diagnostic !== undefined) {
      result.diagnostic = outcome.diagnostic
      bytes += diagnosticBytes
    }
    if (outcome.usage) result.usage = { ...outcome.usage }
    this.drop(info.runId)
    this.forgotten.delete(info.runId)
    this.entries.set(info.runId, { result: Object.freeze(result), bytes })
    this.bytes += bytes
    // The oldest go first; the entry just kept is never the one forgotten.
    const over = () => this.entries.size > maxResults || (this.bytes > maxBytes && this.entries.size > 1)
    while (over()) this.forget(this.entries.keys().next().value!)
  }

  /** The kept outcome of run `runId`, or undefined. */
  get(runId: string): KeptResult | undefined {
    return this.entries.get(runId)?.result
  }

  /** Whether this book kept run `runId`'s outcome once and has forgotten it for room. */
  wasForgotten(runId: string): boolean {
    return this.forgotten.has(runId)
  }

  /** How many outcomes, and bytes of output and diagnostics, are kept now. */
  get size(): { results: number; bytes: number } {
    return { results: this.entries.size, bytes: this.bytes }
  }

  private forget(runId: string): void {
    this.drop(runId)
    this.forgotten.add(runId)
    if (this.forgotten.size > 4 * this.limits.maxResults) this.forgotten.delete(this.forgotten.values().next().value!)
  }

  private drop(runId: string): void {
    const entry = this.entries.get(runId)
    if (!entry) return
    this.entries.delete(runId)
    this.bytes -= entry.bytes
  }
}

/**
 * The ended runs this host can continue: bounded in count (`MAX_CONTINUABLE_RUNS`) and in time
 * (`CONTINUE_WINDOW_MS`), no timers (expired entries are dropped as the book is used). An entry
 * holds the provider's run (its child's transcript) and the parent agent, nothing is copied.
 */
export class ContinuableRuns {
  /** @internal */ readonly book = new Map<string, ContinuableEntry>()
  /** @internal runs being continued now: the continues they had (their entry is back when the new turn ends). */
  readonly inFlight = new Map<string, number>()

  constructor(
    /** @internal */ readonly ctx: Context,
    /** @internal */ readonly live: Map<string, LiveRun>,
    events: SubagentEvents,
    /** @internal */ readonly begin: (provider: string, request: SubagentRequest, options: BeginOptions) => SubagentStart,
  ) {
    events.observe({ 'subagent/end': (info, outcome) => this.ended(this.live.get(info.runId), outcome) })
  }

  /** A run ended (`subagent/end`): kept when its provider can continue it. */
  ended(run: LiveRun | undefined, outcome: SubagentOutcome, now = Date.now()): void {
    if (!run) return
    const continues = this.inFlight.get(run.id) ?? 0
    this.inFlight.delete(run.id)
    const providerRun = run.providerRun
    if (typeof providerRun?.continueWith !== 'function') return
    const { info } = run
    this.book.delete(run.id)
    this.book.set(run.id, {
      runId: run.id, provider: info.provider, parentId: info.parentId, ...info.label ? { label: info.label } : {},
      endedAt: now, stopReason: outcome.stopReason, continues, run: providerRun, parent: run.parent,
    })
    this.trim(now)
  }

  /** The runs that can be continued now (only `parent`'s children when given), the most recently ended last. */
  list(parent?: SubagentRequest['parent']): ContinuableRunInfo[] {
    const listed: ContinuableRunInfo[] = []
    const now = Date.now()
    for (const entry of this.book.values()) {
      if ((parent && entry.parent !== parent) || expired(entry, now)) continue
      const { run: _run, parent: _parent, ...info } = entry
      listed.push(info)
    }
    return listed
  }

  /** See `SubagentService.continue` (verbs/continuation.ts). */
  continue(runId: string, message: string, options: ContinueOptions = {}): Promise<SubagentHandle> {
    return continueRun(this, runId, message, options)
  }

  /** @internal drops what ended longer than `CONTINUE_WINDOW_MS` ago, and the oldest past `MAX_CONTINUABLE_RUNS`. */
  trim(now: number): void {
    for (const [runId, entry] of this.book) {
      if (this.book.size <= MAX_CONTINUABLE_RUNS && !expired(entry, now)) break
      this.book.delete(runId)
    }
  }

  /** @internal */
  isExpired(entry: ContinuableEntry, now: number): boolean {
    return expired(entry, now)
  }
}

/** Ended longer than `CONTINUE_WINDOW_MS` ago (an entry put back after a failed continue may sit behind newer ones). */
function expired(entry: ContinuableEntry, now: number): boolean {
  return now - entry.endedAt >= CONTINUE_WINDOW_MS
}
