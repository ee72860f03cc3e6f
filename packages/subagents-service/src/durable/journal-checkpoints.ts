import type { Context, Logger } from 'cordis'
import { describeError, headChars, type PendingQuestion, withoutCallerTracing } from '@cordis-subagents/shared'
import type { BackgroundRegistry } from '../background/book.js'
import type { ContinueClaim, JournalledRun, ParkedRunInfo, RunJournal } from '../run/journal-port.js'
import { StoredRuns } from './journal-restore.js'
import { checkpointsLoaded, WaitingJournal } from './journal-waiting.js'
import { EXIT_FLUSH_MS, flushWithin, RECORD_WAIT_MS, RecordWaits } from './record-waits.js'
import {
  cancelEndedQuestions, cancelPending, claimKey, deferredOf, MAX_LABEL, put, putWithTranscript, reattachOf, safeCheckpoint, settleNow,
  settleRecord,
} from './journal-records.js'
import { type CheckpointStore, storedQuestionId, type StoredRunCheckpoint } from './journal-store.js'
import type { SubagentOutcome, SubagentProvider, SubagentStopReason } from '../types.js'
import { ContinueClaims } from './continue-claim.js'

type Kind = 'start' | 'park' | 'resume' | 'settle' | 'claim'

/** Where a live run sits in the tree, so its own children's records get their path. */
type Place = { runId: string; path: string }

/** Live or parked runs whose place is remembered (children look their parent up by agent id). */
const MAX_PLACES = 10_000

/**
 * The journal of a host with `ctx.checkpoints`: one database write per state change of a run
 * (start, park, resume, settle), never per step. Writes run in the background, in order per run;
 * a failed write is logged (once per kind of write, then at debug level) and the run goes on: the
 * record is then stale, never the delegation broken. Looks the store up at each write, so a store
 * that comes or goes while the host runs is picked up; without one nothing is written.
 */
export class CheckpointJournal implements RunJournal {
  /** @internal The bound of `recorded` (`RECORD_WAIT_MS`), read when a journal is made: a test of a hung store lowers it. */
  static recordWaitMs = RECORD_WAIT_MS
  /** @internal The bound of the flush at the host's exit (`EXIT_FLUSH_MS`), read at the exit: a test of a hung store lowers it. */
  static exitFlushMs = EXIT_FLUSH_MS
  /** Each run's last queued write: the next one waits for it (the order of a run's states). */
  private readonly queues = new Map<string, Promise<void>>()
  /** Child agent id → that run's place. */
  private readonly places = new Map<string, Place>()
  /** Run id → the id of the question it is parked on. */
  private readonly open = new Map<string, string>()
  private readonly failed = new Set<Kind>()
  /** Runs with a start queued that must be written before anything else of theirs (`writeFirst`). */
  private readonly first = new Set<string>()
  /** Runs whose settle went to the store ahead of their queued writes: those leave the record alone. */
  private readonly ahead = new Set<string>()
  /** The store the last write went to. */
  private written: CheckpointStore | undefined
  /** Runs of earlier starts: the parked ones `pending()` lists, and their restore. */
  readonly stored: StoredRuns
  /** Outcomes waiting for their records, under one timer. */
  private readonly waits: RecordWaits
  private readonly continues = new ContinueClaims()
  /** The app's: inactive from the moment `ctx.stop()` begins (none for a context never started: nothing stops it). */
  private readonly lifecycle: { readonly isActive: boolean } | undefined

  constructor(
    ctx: Context,
    private readonly store: () => CheckpointStore | undefined,
    private readonly log: Logger,
    private readonly background?: BackgroundRegistry,
  ) {
    this.stored = new StoredRuns(ctx, store, log)
    this.lifecycle = ctx.lifecycle.isActive ? ctx.lifecycle : undefined
    this.waits = new RecordWaits(CheckpointJournal.recordWaitMs, (runId, ms) => log.warn(
      'run %s: its record was not written within %d ms (the store is slow or hung); its outcome is given without it', runId, ms))
  }

  /** Continues a run of an earlier start (see `StoredRuns.reopen`). */
  reopen(runId: string, answer: string): Promise<SubagentOutcome | undefined> { return this.stored.reopen(runId, answer) }

  /** A task recorded by an earlier start (see `StoredRuns.reattached`). */
  reattached(provider: SubagentProvider, parentId: string, key: string, runId: string): Promise<SubagentProvider | undefined> {
    return this.stored.reattached(provider, parentId, key, runId)
  }

  /** Parked runs of earlier starts, read from the store at start. */
  pending(): ParkedRunInfo[] { return this.stored.pending() }

  /** A continue's claim on its run's record (see `ContinueClaims.claim`). */
  claimContinue(runId: string, endedAs: SubagentStopReason): Promise<ContinueClaim | undefined> {
    return this.continues.claim(this.store(), runId, endedAs)
  }

  /**
   * Resolves once every write queued so far for run `runId` has run (or failed), or after
   * `RECORD_WAIT_MS` (logged: the record may be missing); undefined when none is queued.
   */
  recorded(runId: string): Promise<void> | undefined {
    const queued = this.queues.get(runId)
    return queued && this.waits.wait(runId, queued)
  }

  /** Resolves when every write queued so far is in the store (tests, and a host that stops). */
  async flush(): Promise<void> {
    while (this.queues.size) await Promise.all(this.queues.values())
    // A store's lazy writes (a start record) are queued there, not here.
    await this.written?.drain?.()
  }

  started(run: JournalledRun): void {
    const { info } = run
    const parent = this.places.get(info.parentId)
    const path = parent ? `${parent.path}/${run.id}` : `${info.parentId}/${run.id}`
    if (info.childId) this.remember(info.childId, { runId: run.id, path })
    if (this.stored.restored(run.id)) {
      // A run of an earlier start, restored: its record keeps its path, parent and label.
      const agent = info.childId ? { agent: headChars(info.childId, MAX_LABEL) } : {}
      this.write(run.id, 'start', async (store) => { if (!this.ahead.has(run.id)) await put(store, { id: run.id, state: 'running', ...agent }) })
      return
    }
    const found = this.store()
    if (run.continues) {
      const checkpoint = safeCheckpoint(run)
      // An explicit new turn of an ended run: the one move out of an ended state the store allows, as a compare-and-set,
      // which the continue took before the turn started (`claimContinue`) unless the store was not ready then.
      const claimed = this.continues.take(run.id) && !!found
      this.writeFirst(found, run.id, !claimed, async (store) => {
        if (!claimed && !await store.continueRun(run.id)) return
        if (!this.ahead.has(run.id)) await this.saveWithTranscript(store, { id: run.id, state: 'running' }, checkpoint)
      })
      return
    }
    const record: StoredRunCheckpoint = { id: run.id, path, parent: parent?.runId ?? '', provider: info.provider, state: 'running' }
    if (info.childId) record.agent = headChars(info.childId, MAX_LABEL)
    if (info.label) record.label = headChars(info.label, MAX_LABEL)
    if (run.reattachKey) {
      const checkpoint = safeCheckpoint(run)
      this.writeFirst(found, run.id, true, async (store) => {
        // The claim first: a stop between the two writes then leaves a claim without a run (the next
        // reattach starts afresh), never a run without its claim (which a later reattach would run twice).
        await claimKey(store, run, this.log)
        await this.saveWithTranscript(store, { ...record, ...reattachOf(checkpoint) }, checkpoint, true)
      })
      return
    }
    // The checkpoint (the transcript, reattach ids) is taken when the store writes the start record:
    // a run that settles first never has it serialised (a settled run is never restored).
    if (this.now(found, run.id, 'start', (store) => store.recordNow!(record, { created: true, lazy: true, deferred: () => deferredOf(run) }))) return
    this.writeFirst(found, run.id, true, (store) => {
      if (store.record) return store.record(record, { created: true, lazy: true, deferred: () => deferredOf(run) })
      const checkpoint = safeCheckpoint(run)
      return this.saveWithTranscript(store, { ...record, ...reattachOf(checkpoint) }, checkpoint, true)
    })
  }

  parked(run: JournalledRun, question: PendingQuestion): void {
    const id = storedQuestionId(run.id, question.id)
    this.open.set(run.id, id)
    const checkpoint = safeCheckpoint(run)
    // Read now: `reopen` holds the run as restored until its outcome, and this park is its first.
    const restoring = this.stored.restored(run.id)
    this.write(run.id, 'park', async (store) => {
      const asked = restoring ? await store.questions.get(id) : undefined
      // A restored run parks again on the question it was stored with (still pending), and `reopen`
      // answers it at once. Its record must stay `running`, the claim `reopen`'s transition set:
      // written back to `parked`, even for the moment until the resume's write lands, it would let
      // another host's (or start's) `transition(id, 'parked', 'running')` claim the run too and both
      // resumes would run it (the exactly-once guarantee, test/durable-resume-once.slow.spec.ts).
      if (asked?.state === 'pending') return
      // A settle that went ahead is the record; the question is still asked (the settle cancels it after).
      if (!this.ahead.has(run.id)) await this.saveWithTranscript(store, { id: run.id, state: 'parked', stopReason: 'pending' }, checkpoint)
      if (asked ?? await store.questions.get(id)) return
      await store.questions.ask({ id, runId: run.id, path: [run.id, ...question.path].join('/'), question: JSON.stringify(question) })
    })
  }

  resumed(run: JournalledRun, questionId: string, answer: string): void { this.goesOn(run, questionId, 'answered', answer) }

  /** As `resumed`, but the question is cancelled, not answered: nobody can answer it any more. */
  withdrawn(run: JournalledRun, questionId: string): void { this.goesOn(run, questionId, 'cancelled') }

  private goesOn(run: JournalledRun, questionId: string, how: 'answered' | 'cancelled', answer = ''): void {
    const id = storedQuestionId(run.id, questionId)
    if (this.open.get(run.id) === id) this.open.delete(run.id)
    this.write(run.id, 'resume', async (store) => {
      // Taken when the write runs, the turn going on: a restore must not find it parked on the answered question. A
      // settle that went ahead is the record; the question is still answered (or cancelled) here, once.
      if (!this.ahead.has(run.id)) await this.saveWithTranscript(store, { id: run.id, state: 'running' }, safeCheckpoint(run))
      if ((await store.questions.get(id))?.state !== 'pending') return
      await (how === 'answered' ? store.questions.answer(id, answer) : store.questions.cancel(id))
    })
  }

  settled(run: JournalledRun, outcome: SubagentOutcome): void {
    const question = this.open.get(run.id)
    this.open.delete(run.id)
    if (run.info.childId && this.places.get(run.info.childId)?.runId === run.id) this.places.delete(run.info.childId)
    const live = this.background?.live
    const task = live?.size ? [...live].find((candidate) => candidate.run?.id === run.id) : undefined
    const keepTranscript = outcome.stopReason === 'closed' || outcome.stopReason === 'interrupted' || !!task
    const checkpoint = keepTranscript ? safeCheckpoint(run) : undefined
    const found = this.store()
    // A plain settle (no transcript, no question) goes to the store now.
    if (!question && !task && !keepTranscript && this.now(found, run.id, 'settle', (store) => store.recordNow!(settleRecord(store, run.id, outcome), { logged: true }))) return
    // A parked run the app's stop ended (its holders dispose what they keep as the app goes): the stop's end, not the
    // run's outcome. It stays parked in the store, its question pending, and a resume after the restart continues it.
    if (question && this.lifecycle?.isActive === false) return
    if (!found?.recordNow || this.first.has(run.id)) {
      // Behind a start that must be written first (or a store without `recordNow`): in order.
      this.writeTo(found, run.id, 'settle', async (store) => {
        await this.saveWithTranscript(store, settleRecord(store, run.id, outcome, task), checkpoint)
        if (question) await this.cancel(store, question)
      })
      return
    }
    // Any other settle goes to the store now too (its transcript and delivery as of now): a `ctx.stop()` in this tick
    // finds it in the run log. Writes of the run still queued (a park, a resume) leave the record to it. The question's
    // cancel needs the database: a stop that removes it first leaves the cancel to the next start (`cancelEndedQuestions`).
    this.written = found
    const queued = this.queues.has(run.id)
    if (queued) this.ahead.add(run.id)
    const written = settleNow(found, settleRecord(found, run.id, outcome, task), checkpoint, this.log)
    if (!queued) {
      const then = question ? written ? written.then(() => this.cancel(found, question)) : this.cancel(found, question) : written
      if (then) this.queue(run.id, then, 'settle')
      return
    }
    const failed = written?.then(() => undefined, (error: unknown) => error)
    this.writeTo(found, run.id, 'settle', async (store) => {
      // Every write queued before it has run.
      this.ahead.delete(run.id)
      const error = await failed
      if (error !== undefined) throw error
      if (question) await this.cancel(store, question)
    })
  }

  /** Cancels stored question `id` if it is still pending; a store gone meanwhile (a stop) leaves it to the next start. */
  private cancel(store: CheckpointStore, id: string): Promise<void> {
    return cancelPending(store, id).catch((error: unknown) => {
      if (this.store() === store) throw error
      this.log.debug('question %s: its cancel was not written before the store stopped (the next start cancels it): %s', id, describeError(error))
    })
  }

  /** Saves `record` with the run's checkpoint as its transcript (one too large to keep is dropped: `putWithTranscript`). */
  private saveWithTranscript(store: CheckpointStore, record: StoredRunCheckpoint, checkpoint: unknown, created?: boolean): Promise<void> {
    if (checkpoint === undefined) return put(store, record, created)
    return putWithTranscript(store, record, checkpoint, this.log, created)
  }

  private remember(agentId: string, place: Place): void {
    if (this.places.size >= MAX_PLACES) this.places.delete(this.places.keys().next().value!)
    this.places.set(agentId, place)
  }

  /** `writeTo` the current store. */
  private write(runId: string, kind: Kind, work: (store: CheckpointStore) => Promise<void>): void {
    this.writeTo(this.store(), runId, kind, work)
  }

  /** Runs `work` after the run's queued writes (a turn later when none is queued: hooks read the run as it goes on). */
  private writeTo(store: CheckpointStore | undefined, runId: string, kind: Kind, work: (store: CheckpointStore) => Promise<void>): void {
    if (!store) return
    this.written = store
    const previous = this.queues.get(runId) ?? Promise.resolve()
    this.queue(runId, previous.then(() => work(store)), kind)
  }

  /** `writeTo` for a write no later one may go ahead of (a new row, a task key's claim, a continue's compare-and-set). */
  private writeFirst(store: CheckpointStore | undefined, runId: string, first: boolean, work: (s: CheckpointStore) => Promise<void>): void {
    if (!first || !store) return this.writeTo(store, runId, 'start', work)
    this.first.add(runId)
    this.writeTo(store, runId, 'start', (to) => work(to).finally(() => this.first.delete(runId)))
  }

  /** Runs `work` now when the store has `recordNow` and no write of the run is queued (true); queued only if it gave a promise. */
  private now(store: CheckpointStore | undefined, runId: string, kind: Kind, work: (s: CheckpointStore) => Promise<void> | void): boolean {
    if (!store?.recordNow || this.queues.has(runId)) return false
    this.written = store
    const pending = work(store)
    if (pending) this.queue(runId, pending, kind)
    return true
  }

  private queue(runId: string, work: Promise<void>, kind: Kind): void {
    const next = work.catch((error: unknown) => this.failure(runId, kind, error))
    this.queues.set(runId, next)
    void next.then(() => this.queues.get(runId) === next && this.queues.delete(runId))
  }

  private failure(runId: string, kind: Kind, error: unknown): void {
    if (this.failed.has(kind)) {
      this.log.debug('checkpoint %s of run %s failed: %s', kind, runId, describeError(error))
      return
    }
    this.failed.add(kind)
    this.log.warn('checkpoint %s of run %s failed (the run goes on; later %s failures are logged at debug level): %s',
      kind, runId, kind, describeError(error))
  }
}

/** The journal a service uses: the checkpoints store when `ctx.checkpoints` is loaded, nothing written otherwise. */
// The store is looked up once, past cordis' caller-tracing proxy (every call through it builds a shadow
// context: tens of microseconds a write); `ctx` injects it, so a replaced store restarts this journal.
function checkpointJournal(ctx: Context, log: Logger, background?: BackgroundRegistry): CheckpointJournal {
  const found = ctx.get('checkpoints' as never) as CheckpointStore | undefined
  const store = found && withoutCallerTracing(found)
  let live = true
  ctx.on('dispose', () => { live = false })
  return new CheckpointJournal(ctx, () => live ? store : undefined, log, background)
}

/** What `useCheckpointJournal` needs of the service. */
export interface JournalHost {
  useJournal(journal: RunJournal): () => void
  readonly background: BackgroundRegistry
}

/**
 * Records runs in `ctx.checkpoints` while it is loaded: a checkpoints plugin that comes (after its
 * database opened) installs the journal, one that goes puts the no-op journal back. Until the
 * first store is ready, a loaded checkpoints plugin's runs wait for it (journal-waiting.ts).
 * Without it nothing is written. At start the parked runs of earlier starts are read for
 * `pending()`. At the app's `exit` (the loader awaits it before the process exits on a signal)
 * queued writes run first, for at most `EXIT_FLUSH_MS`.
 */
// No flush on dispose: cordis 3.18 disposes synchronously and removes `ctx.database` in the same pass as this journal,
// so a write queued then has no database left. Settles go to the store in the hook, outcomes wait for their
// records (`recorded`), and the loader's awaited `exit` event flushes.
export function useCheckpointJournal(ctx: Context, service: JournalHost, log: Logger): void {
  const waiting = new WaitingJournal(log, () => checkpointsLoaded(ctx))
  let undoWaiting: (() => void) | undefined
  let ready = false
  // The waiting journal is put in place only once a checkpoints plugin is loaded: without one the
  // service keeps no journal, and a delegation never calls into this folder.
  const expectStore = () => {
    if (!ready && !undoWaiting && checkpointsLoaded(ctx)) undoWaiting = service.useJournal(waiting)
  }
  expectStore()
  ctx.on('internal/runtime', expectStore)
  ctx.on('dispose', () => waiting.close())
  ctx.inject(['checkpoints' as never], (inner) => {
    ready = true
    undoWaiting?.()
    undoWaiting = undefined
    const journal = checkpointJournal(inner, log, service.background)
    const undo = service.useJournal(journal)
    waiting.replay(journal)
    inner.on('dispose', () => void (undo(), journal.stored.close()))
    // The loader's `exit` event (not in cordis' own event map).
    const app = inner as unknown as { on(name: 'exit', listener: () => Promise<void>): void }
    app.on('exit', () => flushWithin(journal, CheckpointJournal.exitFlushMs, log))
    journal.stored.load().catch((error: unknown) => log.warn('could not read the parked runs of earlier starts: %s', describeError(error)))
    cancelEndedQuestions(inner, log)
  })
}
