import type { Context } from 'cordis'
import { headChars } from '@cordis-subagents/shared'
import type { Delegation } from '../run/delegation.js'
import { SubagentError } from '../errors.js'
import type { CheckpointStore, StoredRun } from '../durable/journal-store.js'
import type { ResultBook } from '../after-run.js'
import { MAX_KEPT_RESULT_BYTES, MAX_KEPT_RESULTS, type KeptResult } from './results.js'
import type { SubagentRunState, SubagentStopReason } from '../types.js'
import { statusOf } from '../run/delegation.js'

// `ctx.subagents.result(runId)`: a run's final outcome, from this process' book of recent results,
// else from the durable store. Reading never starts, resumes or touches a run.

/** Longest run id looked up (the store's id bound). */
const MAX_RUN_ID = 255

/** The runs a continue is starting now (`ContinuableRuns.inFlight`): their new turn is not handed over yet. */
type Continuing = { has(runId: string): boolean }

/**
 * Run `runId`'s final outcome: from `book` (this process' recent results), else from
 * `ctx.checkpoints` when loaded (its output capped at the store's `maxTextBytes`). Rejects
 * `INVALID_REQUEST`, `NOT_ENDED` (running, parked or interrupted), `RESULT_EXPIRED`, `NOT_FOUND`.
 */
export async function readResult(
  runId: string, book: ResultBook, live: ReadonlyMap<string, Delegation>, ctx: Context, continuing: Continuing,
): Promise<KeptResult> {
  if (typeof runId !== 'string' || !runId || runId.length > MAX_RUN_ID) {
    throw new SubagentError('INVALID_REQUEST', `A run id is a non-empty string of at most ${MAX_RUN_ID} characters (as run.id or info.runId gave it).`)
  }
  const kept = keptIfEnded(runId, book, live, continuing)
  if (kept) return kept
  const store = ctx.get('checkpoints' as never) as CheckpointStore | undefined ?? undefined
  const stored = store ? await store.load(runId) : undefined
  // It may have ended, or been continued, while the store was read.
  const now = keptIfEnded(runId, book, live, continuing)
  if (now) return now
  if (stored && store) return fromStore(store, stored)
  if (book.wasForgotten(runId)) {
    throw new SubagentError('RESULT_EXPIRED', `Run ${runId} ended on this host, but its result is no longer kept: this process keeps the last `
      + `${MAX_KEPT_RESULTS} results (${MAX_KEPT_RESULT_BYTES / 1024 / 1024} MiB of output)${store ? ', and the checkpoint store has no record of it (swept after its retention, or never written)' : '; load @cordis-subagents/checkpoints to keep results longer'}.`)
  }
  throw new SubagentError('NOT_FOUND', `No run ${JSON.stringify(headChars(runId, 100))} ended on this host`
    + `${store ? ' or is in the checkpoint store' : ''}; `
    + 'check the id (run.id, info.runId, or a tool result\'s metadata.runId).')
}

/**
 * The book's outcome of `runId`, unless the run is live and not ended or a continue of it is starting: a continued run
 * keeps its id, and while its new turn starts or runs the book still holds the previous turn's outcome, not its final one.
 */
function keptIfEnded(
  runId: string, book: ResultBook, live: ReadonlyMap<string, Delegation>, continuing: Continuing,
): KeptResult | undefined {
  const run = live.get(runId)
  if (run && run.state !== 'ended') throw notEnded(runId, run.state)
  if (continuing.has(runId)) throw notEnded(runId, 'running', ' (a continue of it is starting)')
  return book.get(runId)
}

function notEnded(runId: string, state: SubagentRunState | StoredRun['state'], where = ''): SubagentError {
  const next = state === 'parked' ? 'answer its question (ctx.subagents.resume(runId, answer)), then read its result'
    : state === 'interrupted' ? 'wake or close it (ctx.subagents.wake / close), then read its result'
      : 'wait for it (its handle\'s result), then read its result'
  return new SubagentError('NOT_ENDED', `Run ${runId} has not ended: it is ${state}${where}. Nothing was re-run; ${next}.`)
}

/** A stored run as a result: only an ended one has a final outcome. */
async function fromStore(store: CheckpointStore, stored: StoredRun): Promise<KeptResult> {
  if (stored.state !== 'settled' && stored.state !== 'closed') {
    throw notEnded(stored.id, stored.state, stored.host && stored.host !== store.host ? ` on host ${stored.host}` : ' (in the checkpoint store)')
  }
  const output = stored.result ?? ''
  const stopReason = (stored.stopReason ?? (stored.state === 'closed' ? 'closed' : 'error')) as SubagentStopReason
  const { status, limit } = statusOf({ stopReason })
  const result: KeptResult = {
    runId: stored.id,
    provider: stored.provider,
    parentId: await parentAgentOf(store, stored),
    stopReason,
    status,
    output,
    work: { steps: stored.work.steps ?? 0, toolCalls: stored.work.toolCalls ?? 0, delegations: stored.work.delegations ?? 0 },
    endedAt: stored.updatedAt.getTime(),
    source: 'store',
    // The store cuts a longer result to maxTextBytes (less at most 3 bytes of a split character).
    truncated: Buffer.byteLength(output, 'utf8') > store.limits.maxTextBytes - 4,
  }
  if (stored.label) result.label = stored.label
  if (limit !== undefined) result.limit = limit
  if (stored.usage && typeof stored.usage.inputTokens === 'number' && typeof stored.usage.outputTokens === 'number') {
    result.usage = { ...stored.usage } as unknown as KeptResult['usage']
  }
  return Object.freeze(result)
}

/**
 * The agent that started a stored run: a run without a stored parent run was started by the
 * agent its path begins with; a nested one by its parent run's child agent.
 */
async function parentAgentOf(store: CheckpointStore, stored: StoredRun): Promise<string> {
  if (!stored.parent) return stored.root || stored.path.split('/')[0]
  return (await store.load(stored.parent))?.agent ?? ''
}
