import type { Context } from 'cordis'
import type { Agent } from '@cordis-subagents/agent'
import { MAX_MESSAGE_LENGTH } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type { SubagentEvents } from '../events.js'
import type { LiveRun } from '../run/delegation.js'
import type {
  BeginOptions, ProviderStartRequest, SubagentHandle, SubagentOutcome, SubagentProvider, SubagentRequest, SubagentRun, SubagentStart,
  SubagentStopReason, SubagentUpdate,
} from '../types.js'

// Continuing a run that ended (`ctx.subagents.continue`): a new turn of the same child, asked for
// by someone, on its transcript. Never a re-run of the turn that ended: that one stays settled.

/** How long a run stays continuable after it ended (ms): 1 hour. */
export const CONTINUE_WINDOW_MS = 60 * 60_000
/** Most ended runs one service keeps continuable; the one that ended longest ago is dropped first. */
export const MAX_CONTINUABLE_RUNS = 256
/** Most continues one run takes (each is a new turn, charged as a delegation of its parent). */
export const MAX_CONTINUES_PER_RUN = 32

export interface ContinueOptions {
  /**
   * The agent that continues its own child: only a run this agent delegated is found (others are
   * `NOT_FOUND`), and the new turn is its delegation (its slots and budget). Default: the run's
   * own parent while it lives, else a fresh root agent of this host.
   */
  parent?: Agent
  signal?: AbortSignal
  onUpdate?: (update: SubagentUpdate) => void
}

/** A run that ended and can be continued, as `ctx.subagents.continuable()` lists it. */
export interface ContinuableRunInfo {
  runId: string
  provider: string
  parentId: string
  label?: string
  /** `Date.now()` when its last turn ended. */
  endedAt: number
  /** Its last turn's stop reason. */
  stopReason: SubagentStopReason
  /** Continues it took so far. */
  continues: number
}

interface Entry extends ContinuableRunInfo {
  run: SubagentRun
  parent: Agent
}

/** For a continue (`begin`'s `continues`): the provider with the ended run's `continueWith` in place of `start`. */
export function continuingProvider(provider: SubagentProvider, { run, message }: NonNullable<BeginOptions['continues']>): SubagentProvider {
  return Object.assign(Object.create(provider) as SubagentProvider, {
    start: (next: ProviderStartRequest) => run.continueWith!(message, next),
  })
}

/**
 * The ended runs this host can continue: bounded in count (`MAX_CONTINUABLE_RUNS`) and in time
 * (`CONTINUE_WINDOW_MS`), no timers (expired entries are dropped as the book is used). An entry
 * holds the provider's run (its child's transcript) and the parent agent, nothing is copied.
 */
export class ContinuableRuns {
  private readonly book = new Map<string, Entry>()
  /** Runs being continued now: the continues they had (their entry is back when the new turn ends). */
  private readonly inFlight = new Map<string, number>()

  constructor(
    private readonly ctx: Context,
    private readonly live: Map<string, LiveRun>,
    events: SubagentEvents,
    private readonly begin: (provider: string, request: SubagentRequest, options: BeginOptions) => SubagentStart,
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
  list(parent?: Agent): ContinuableRunInfo[] {
    const listed: ContinuableRunInfo[] = []
    const now = Date.now()
    for (const entry of this.book.values()) {
      if ((parent && entry.parent !== parent) || expired(entry, now)) continue
      const { run: _run, parent: _parent, ...info } = entry
      listed.push(info)
    }
    return listed
  }

  /** See `SubagentService.continue`. */
  async continue(runId: string, message: string, options: ContinueOptions = {}): Promise<SubagentHandle> {
    if (typeof runId !== 'string' || !runId) throw new SubagentError('INVALID_REQUEST', 'continue() takes a run id (a non-empty string, as `run.id` gave it).')
    if (typeof message !== 'string' || !message.trim()) throw new SubagentError('INVALID_REQUEST', 'continue() takes a non-empty message.')
    if (message.length > MAX_MESSAGE_LENGTH) {
      throw new SubagentError('INVALID_REQUEST', `A message is at most ${MAX_MESSAGE_LENGTH} characters (got ${message.length}); shorten it.`)
    }
    const live = this.live.get(runId)
    if (live && live.state !== 'ended') {
      throw new SubagentError('NOT_SETTLED', `Run ${runId} is ${live.state}, not ended: ${live.state === 'parked' ? 'answer it (resume)' : live.state === 'interrupted' ? 'send it a message and wake it' : 'send it a message (send)'} instead.`)
    }
    if (this.inFlight.has(runId)) throw new SubagentError('NOT_SETTLED', `Run ${runId} is being continued already; wait for that turn's result.`)
    this.trim(Date.now())
    const entry = this.book.get(runId)
    const foreign = options.parent && entry?.parent !== options.parent
    if (!entry || expired(entry, Date.now()) || foreign) throw notContinuable(runId, !!options.parent)
    if (entry.continues >= MAX_CONTINUES_PER_RUN) {
      throw new SubagentError('CONTINUE_LIMIT', `Run ${runId} was continued ${entry.continues} times (the limit per run); delegate a new task instead.`)
    }
    const fresh = !options.parent && entry.parent.disposed
    const parent = options.parent ?? (fresh ? this.freshParent(runId) : entry.parent)
    const request: SubagentRequest = { prompt: message, parent, signal: options.signal ?? new AbortController().signal }
    if (entry.label) request.label = entry.label
    if (options.onUpdate) request.onUpdate = options.onUpdate
    this.book.delete(runId)
    this.inFlight.set(runId, entry.continues + 1)
    try {
      const handle = await this.begin(entry.provider, request, { continues: { runId, run: entry.run, message } }).handle
      if (fresh) void (handle as LiveRun).ended.finally(() => parent.dispose())
      return handle
    } catch (error) {
      // Nothing started: the run is continuable as it was.
      this.inFlight.delete(runId)
      this.book.set(runId, entry)
      if (fresh) await parent.dispose()
      throw error
    }
  }

  /** Drops what ended longer than `CONTINUE_WINDOW_MS` ago, and the oldest past `MAX_CONTINUABLE_RUNS`. */
  private trim(now: number): void {
    for (const [runId, entry] of this.book) {
      if (this.book.size <= MAX_CONTINUABLE_RUNS && !expired(entry, now)) break
      this.book.delete(runId)
    }
  }

  /** The parent of a continued run whose own parent is gone: a fresh root agent (disposed once the run ends). */
  private freshParent(runId: string): Agent {
    const agents = this.ctx.get('agents') as { create(options: { label?: string }): Agent } | undefined
    if (!agents) throw new SubagentError('UNSUPPORTED', `Run ${runId} cannot be continued: its parent is gone and no agent runtime (ctx.agents) is loaded.`)
    return agents.create({ label: `continuing parent of ${runId}` })
  }
}

/** Ended longer than `CONTINUE_WINDOW_MS` ago (an entry put back after a failed continue may sit behind newer ones). */
function expired(entry: Entry, now: number): boolean {
  return now - entry.endedAt >= CONTINUE_WINDOW_MS
}

function notContinuable(runId: string, scoped: boolean): SubagentError {
  return new SubagentError('NOT_FOUND', `No run ${JSON.stringify(runId.slice(0, 100))} can be continued${scoped ? ' by you' : ''}: `
    + `it did not end on this host${scoped ? ', is not one you delegated' : ''}, ended more than ${CONTINUE_WINDOW_MS / 60_000} min ago, `
    + 'or its provider cannot continue runs (see ctx.subagents.continuable.list()). Delegate a new task instead.')
}
