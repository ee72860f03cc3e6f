import type { Context } from 'cordis'
import { LRUCache } from 'lru-cache'
import type { Agent } from '@cordis-subagents/agent'
import { headChars, MAX_MESSAGE_LENGTH } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type { LiveRun } from '../run/delegation.js'
import type { ContinueClaim, RunJournal } from '../run/journal-port.js'
import { continuableEnded, expired, holdParent, keepContinuable, type SubagentEvents, trimContinuable } from '../after-run.js'
import { ChildSizes } from './child-sizes.js'
import type {
  BeginOptions, ProviderStartRequest, SubagentHandle, SubagentOutcome, SubagentProvider, SubagentRequest, SubagentStart, SubagentUpdate,
} from '../types.js'
import {
  CONTINUE_WINDOW_MS, type ContinuableEntry, type ContinuableRunInfo, type DroppedRun, MAX_CONTINUABLE_BYTES, MAX_CONTINUABLE_RUNS,
  MAX_SIZED_CHILDREN,
} from './results.js'

// Continuing a run that ended (`ctx.subagents.continue`): a new turn of the same child, asked for
// by someone, on its transcript. Never a re-run of the turn that ended: that one stays settled.

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

/** For a continue (`begin`'s `continues`): the provider with the ended run's `continueWith` in place of `start`. */
export function continuingProvider(provider: SubagentProvider, { run, message }: NonNullable<BeginOptions['continues']>): SubagentProvider {
  return Object.assign(Object.create(provider) as SubagentProvider, {
    start: (next: ProviderStartRequest) => run.continueWith!(message, next),
  })
}

/** What a continue needs of the book of continuable runs (`ContinuableRuns` below). */
interface ContinueBook {
  readonly ctx: Context
  readonly live: Map<string, LiveRun>
  readonly book: LRUCache<string, ContinuableEntry>
  /** Runs dropped from the book to bound memory, by run id. */
  readonly dropped: LRUCache<string, DroppedRun>
  /** Runs being continued now: the continues they had (their entry is back when the new turn ends). */
  readonly inFlight: Map<string, number>
  /** Child transcripts' sizes by agent id, while their runs live (`ChildSizes`). */
  readonly sizes: ChildSizes
  /** The service's journal now: with a durable store, the continue claims the run's record there first. */
  readonly journal: () => RunJournal
  begin(provider: string, request: SubagentRequest, options: BeginOptions): SubagentStart
  /** Drops expired entries and the oldest past the cap. */
  trim(now: number): void
  isExpired(entry: ContinuableEntry, now: number): boolean
}

/** See `SubagentService.continue`. */
async function continueRun(runs: ContinueBook, runId: string, message: string, options: ContinueOptions): Promise<SubagentHandle> {
  if (typeof runId !== 'string' || !runId) throw new SubagentError('INVALID_REQUEST', 'continue() takes a run id (a non-empty string, as `run.id` gave it).')
  if (typeof message !== 'string' || !message.trim()) throw new SubagentError('INVALID_REQUEST', 'continue() takes a non-empty message.')
  if (message.length > MAX_MESSAGE_LENGTH) {
    throw new SubagentError('INVALID_REQUEST', `A message is at most ${MAX_MESSAGE_LENGTH} characters (got ${message.length}); shorten it.`)
  }
  const live = runs.live.get(runId)
  if (live && live.state !== 'ended') {
    throw new SubagentError('NOT_SETTLED', `Run ${runId} is ${live.state}, not ended: ${live.state === 'parked' ? 'answer it (resume)' : live.state === 'interrupted' ? 'send it a message and wake it' : 'send it a message (send)'} instead.`)
  }
  if (runs.inFlight.has(runId)) throw new SubagentError('NOT_SETTLED', `Run ${runId} is being continued already; wait for that turn's result.`)
  const now = performance.now()
  runs.trim(now)
  const entry = runs.book.peek(runId)
  const foreign = options.parent && entry?.parent !== options.parent
  if (!entry || runs.isExpired(entry, now) || foreign) {
    const dropped = entry ? undefined : runs.dropped.get(runId)
    throw notContinuable(runId, !!options.parent, !options.parent || dropped?.parentId === options.parent.id ? dropped : undefined)
  }
  if (entry.continues >= MAX_CONTINUES_PER_RUN) {
    throw new SubagentError('CONTINUE_LIMIT', `Run ${runId} was continued ${entry.continues} times (the limit per run); delegate a new task instead.`)
  }
  runs.book.delete(runId)
  runs.inFlight.set(runId, entry.continues + 1)
  // The new turn's child goes on from the transcript it had (spawn/fork keep the child's agent id): its size counts on from it.
  const childId = entry.run.childId
  if (childId !== undefined) runs.sizes.continue(childId, entry.size)
  let claim: ContinueClaim | undefined
  let parent: Agent | undefined
  let fresh = false
  try {
    // The store first: a resume by run id restoring this run (or a continue on another host) wins, and this one is refused.
    claim = await runs.journal().claimContinue?.(runId, entry.stopReason)
    fresh = !options.parent && (!entry.parent || entry.parent.disposed)
    parent = options.parent ?? (fresh ? freshParent(runs.ctx, runId) : entry.parent!)
    const request: SubagentRequest = { prompt: message, parent, signal: options.signal ?? new AbortController().signal }
    if (entry.label) request.label = entry.label
    if (options.onUpdate) request.onUpdate = options.onUpdate
    const handle = await runs.begin(entry.provider, request, { continues: { runId, run: entry.run, message } }).handle
    if (fresh) void (handle as LiveRun).ended.finally(() => parent!.dispose())
    return handle
  } catch (error) {
    await claim?.release()
    runs.inFlight.delete(runId)
    if (childId !== undefined) runs.sizes.drop(childId)
    holdParent(entry)
    runs.book.set(runId, entry, { size: entry.size })
    if (fresh) await parent?.dispose()
    throw error
  }
}

/** The parent of a continued run whose own parent is gone: a fresh root agent (disposed once the run ends). */
function freshParent(ctx: Context, runId: string): Agent {
  const agents = ctx.get('agents') as { create(options: { label?: string }): Agent } | undefined
  if (!agents) throw new SubagentError('UNSUPPORTED', `Run ${runId} cannot be continued: its parent is gone and no agent runtime (ctx.agents) is loaded.`)
  return agents.create({ label: `continuing parent of ${runId}` })
}

function notContinuable(runId: string, scoped: boolean, dropped: DroppedRun | undefined): SubagentError {
  if (dropped?.unsized) {
    return new SubagentError('NOT_FOUND', `Run ${JSON.stringify(headChars(runId, 100))} can no longer be continued: `
      + `it was dropped to bound memory (this host sizes at most ${MAX_SIZED_CHILDREN} running children's transcripts at once; `
      + 'past that it stopped sizing this run\'s child, and a run of unknown size is not kept). Delegate a new task instead.')
  }
  if (dropped) {
    return new SubagentError('NOT_FOUND', `Run ${JSON.stringify(headChars(runId, 100))} can no longer be continued: `
      + `it was dropped to bound memory (this host keeps the ${MAX_CONTINUABLE_RUNS} continuable runs that ended last, at most `
      + `${MAX_CONTINUABLE_BYTES / 1024 / 1024} MiB of their transcripts). Delegate a new task instead.`)
  }
  return new SubagentError('NOT_FOUND', `No run ${JSON.stringify(headChars(runId, 100))} can be continued${scoped ? ' by you' : ''}: `
    + `it did not end on this host${scoped ? ', is not one you delegated' : ''}, ended more than ${CONTINUE_WINDOW_MS / 60_000} min ago, `
    + 'or its provider cannot continue runs (see ctx.subagents.continuable.list()). Delegate a new task instead.')
}

/**
 * The ended runs this host can continue: bounded in count (`MAX_CONTINUABLE_RUNS`), in the memory their children's
 * transcripts take (`MAX_CONTINUABLE_BYTES`, each as estimated while its child ran) and in time (`CONTINUE_WINDOW_MS`), no
 * timers (expired entries are dropped as the book is used). An entry holds the provider's run (its child's transcript)
 * and, until it is disposed, the parent agent; nothing is copied.
 */
export class ContinuableRuns {
  /**
   * @internal run ids dropped to bound memory (past the count or the byte bound, or a child whose size was lost: `unsized`), with
   * their parent's id: a continue of one says so.
   */
  readonly dropped = new LRUCache<string, DroppedRun>({ max: 4 * MAX_CONTINUABLE_RUNS })
  /**
   * @internal oldest first: an LRU cache only `peek`ed, so in the order runs ended; past the count or the byte bound the oldest
   * go, each in O(1) (`maxSize`: each entry is set with its size).
   */
  readonly book = new LRUCache<string, ContinuableEntry>({
    max: MAX_CONTINUABLE_RUNS,
    maxSize: MAX_CONTINUABLE_BYTES,
    dispose: (entry, runId, reason) => {
      entry.letGo?.()
      if (reason === 'evict') this.dropped.set(runId, { parentId: entry.parentId })
    },
  })
  /** @internal each child agent's transcript size so far, by agent id, until its run's end takes it (`ChildSizes`). */
  readonly sizes = new ChildSizes()
  /** @internal runs being continued now: the continues they had (their entry is back when the new turn ends). */
  readonly inFlight = new Map<string, number>()

  constructor(
    /** @internal */ readonly ctx: Context,
    /** @internal */ readonly live: Map<string, LiveRun>,
    events: SubagentEvents,
    /** @internal */ readonly begin: (provider: string, request: SubagentRequest, options: BeginOptions) => SubagentStart,
    /** @internal */ readonly journal: () => RunJournal,
  ) {
    events.observe({ 'subagent/end': keepContinuable(this) })
  }

  /** A run ended (`subagent/end`; at `endedAt`, epoch ms, now unless given): kept when its provider can continue it. */
  ended(run: LiveRun | undefined, outcome: SubagentOutcome, endedAt?: number): void {
    continuableEnded(this, run, outcome, endedAt)
  }

  /** The runs that can be continued now (only `parent`'s children when given), the most recently ended last. */
  list(parent?: SubagentRequest['parent']): ContinuableRunInfo[] {
    const listed: ContinuableRunInfo[] = []
    const now = performance.now()
    for (const entry of this.book.rvalues()) {
      if (!entry || (parent && entry.parent !== parent) || expired(entry, now)) continue
      const { run: _run, parent: _parent, letGo: _letGo, endedMono: _endedMono, size: _size, ...info } = entry
      listed.push(info)
    }
    return listed
  }

  /** How many runs are kept continuable now, and their children's transcripts' size in all (as estimated while each ran). */
  get size(): { runs: number; bytes: number } { return { runs: this.book.size, bytes: this.book.calculatedSize } }

  /** See `SubagentService.continue`. */
  continue(runId: string, message: string, options: ContinueOptions = {}): Promise<SubagentHandle> {
    return continueRun(this, runId, message, options)
  }

  /** @internal drops what ended longer than `CONTINUE_WINDOW_MS` ago (`now`: `performance.now()`), and the oldest past the cap. */
  trim(now: number): void {
    trimContinuable(this.book, now)
  }

  /** @internal */
  isExpired(entry: ContinuableEntry, now: number): boolean {
    return expired(entry, now)
  }
}
