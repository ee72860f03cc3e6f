import type { Context, Logger } from 'cordis'
import type { Agent } from '@cordis-subagents/agent'
import { answerProblem, describeError, type PendingQuestion } from '@cordis-subagents/shared'
import type { Delegation } from '../run/delegation.js'
import { SubagentError } from '../errors.js'
import type { ParkedRunInfo } from '../run/journal-port.js'
import { type CheckpointStore, storedQuestionId, type StoredRun } from './journal-store.js'
import { TaskReattach } from './reattach-takeover.js'
import { heldError, StoredRunHolds, successorOf, takenOverError } from './stored-run-holds.js'
import { HELD_RETRY_MS, pastDeadline, StoredParkDeadlines } from './parked-deadlines.js'
import { cancelPending } from './journal-records.js'
import type { BeginOptions, RunRecord, SubagentOutcome, SubagentProvider, SubagentRequest, SubagentStart } from '../types.js'

// Runs this host no longer has in memory (it restarted): listing the parked ones, and continuing
// one through its provider's `restore`.

/** What a restore needs of `ctx.subagents`: `begin` with the stored record (service.ts; named by shape, not imported). */
type Restorer = { begin(name: string, request: SubagentRequest, options: BeginOptions): SubagentStart }

/** Stored parked runs listed by `pending()` (read at start; those this start continues are dropped). */
const MAX_STORED_PARKED = 1000

export class StoredRuns {
  private readonly parked = new Map<string, ParkedRunInfo>()
  /** Runs being restored now: a second resume of one is refused rather than restoring it twice. */
  private readonly reopening = new Set<string>()
  /** Stored runs a resume or a re-run is continuing in this process: the other waits (a re-run) or is refused (a resume). */
  private readonly holds = new StoredRunHolds()
  /** When each listed parked run stops waiting (its question's `expiresAt`): it ends `timeout` then, in the store. */
  private readonly deadlines = new StoredParkDeadlines((runId, question) => void this.expire(runId, question))

  constructor(
    private readonly ctx: Context,
    private readonly store: () => CheckpointStore | undefined,
    private readonly log: Logger,
  ) {}

  /** Whether run `runId` is one this start restored (its stored path and parent stay as they were). */
  restored(runId: string): boolean {
    return this.reopening.has(runId)
  }

  /** Reads this host's parked runs from the store (at start). */
  async load(): Promise<void> {
    const store = this.store()
    if (!store) return
    // This host's only (on a shared database another host's parked runs would fill the limit), and without their
    // transcripts: a listing, not a restore (a resume loads the one it continues).
    const runs = await store.list({ state: 'parked', host: store.host, brief: true, limit: MAX_STORED_PARKED })
    for (const run of runs) {
      if (run.host !== store.host) continue
      const question = await this.questionOf(store, run.id)
      if (!question) continue
      // One that stopped waiting while the host was down ends now, unlisted.
      if (pastDeadline(question)) await this.expire(run.id, question)
      else {
        this.parked.set(run.id, { runId: run.id, parentId: run.parent, question })
        this.deadlines.watch(run.id, question)
      }
    }
  }

  /** The store went (its plugin was unloaded): no deadline of a stored run runs after. */
  close(): void { this.deadlines.close() }

  /**
   * Stored parked run `runId` stopped waiting (its question's `expiresAt` passed): ends it `timeout` in the store (a
   * compare-and-set: a resume or another start that took the run first wins) and cancels its question; no longer listed.
   * A run a resume or a re-run of this process holds is looked at again later (either may put it back parked).
   */
  private async expire(
    runId: string, question: PendingQuestion, held = this.reopening.has(runId) || !!this.holds.get(runId),
  ): Promise<boolean> {
    const store = this.store()
    if (!store) return false
    if (held) {
      this.deadlines.watch(runId, question, Date.now() + HELD_RETRY_MS)
      return false
    }
    try {
      // Only the question this deadline belongs to ends the run: another start of this host on the database may have
      // resumed it since, and it may wait on another question now (bounded by that start's provider).
      if ((await this.questionOf(store, runId))?.id !== question.id) {
        this.parked.delete(runId)
        return false
      }
      const ended = await store.transition(runId, 'parked', { state: 'settled', stopReason: 'timeout', result: '' })
      if (ended) {
        this.parked.delete(runId)
        await cancelPending(store, storedQuestionId(runId, question.id))
        this.log.info('run %s: its question waited past its provider\'s bound on parked time while the host was down or before '
          + 'anyone answered it; it ended timeout', runId)
      } else if ((await store.load(runId))?.state !== 'parked') this.parked.delete(runId)
      return ended
    } catch (error) {
      this.log.warn('run %s: could not end it past its question\'s deadline: %s', runId, describeError(error))
      return false
    }
  }

  /** Stored parked runs (not live in this process). */
  pending(): ParkedRunInfo[] {
    return [...this.parked.values()]
  }

  /**
   * Continues stored run `runId` with `answer` through its provider's `restore`: a parked run
   * takes it as the answer to its question; an interrupted or closed one runs a new turn with it
   * as the message. Undefined when the store has no such run. The store's compare-and-set moves
   * the run to `running` first, so of two resumes (in this start, or another start of this host on
   * the same database) one continues it and the other is refused; a settled run is refused
   * `NOT_PARKED` naming how it ended, and never runs again.
   */
  async reopen(runId: string, answer: string): Promise<SubagentOutcome | undefined> {
    const store = this.store()
    if (!store) return undefined
    const problem = answerProblem(answer)
    if (problem) throw new SubagentError('INVALID_REQUEST', problem)
    const held = this.holds.get(runId)
    if (held) throw heldError(runId, held)
    this.reopening.add(runId)
    // Held until the restored run ends (a re-run of its task waits for it), or until now when nothing was handed over.
    const letGo = this.holds.take(runId, { by: 'resume' })
    let handedOver = false
    try {
      const stored = await store.load(runId)
      if (!stored) return undefined
      const successor = successorOf(stored)
      if (successor) throw takenOverError(runId, successor)
      const record = await this.recordOf(store, stored)
      if (stored.state === 'parked' && pastDeadline(record.question)) {
        await this.expire(runId, record.question!, false)
        throw await this.notContinued(store, runId)
      }
      if (!await store.transition(runId, stored.state, 'running')) throw await this.notContinued(store, runId)
      return await this.restore(stored, record, answer, () => store.transition(runId, 'running', stored.state), (ended) => {
        handedOver = true
        // Live in this process from here on (its provider bounds its parked time), whatever the answer does.
        this.parked.delete(runId)
        this.deadlines.forget(runId)
        void ended.finally(letGo)
      })
    } finally {
      this.reopening.delete(runId)
      if (!handedOver) letGo()
    }
  }

  /** Why stored run `runId` could not be moved to running: another resume took it, or it ended. */
  private async notContinued(store: CheckpointStore, runId: string): Promise<SubagentError> {
    const now = await store.load(runId)
    if (now?.state === 'settled') return ended(now)
    const successor = now && successorOf(now)
    if (successor) return takenOverError(runId, successor)
    return new SubagentError('NOT_PARKED',
      `Run ${runId} is ${now?.state ?? 'gone from the store'}: another resume is continuing it (or did); wait for its outcome.`)
  }

  /**
   * A delegation under task key `key` that an earlier start of this host recorded (the store's
   * claim): a run that ended `completed` or `closed` gives its recorded result again; a parked or
   * interrupted one is taken over (restored parked on its question, or woken) in place of a second
   * child, and its old record closed as continued by `runId` once the restore handed it over; one a
   * resume is continuing in this process is waited for, then looked at again (reattach-takeover.ts).
   * Undefined: start a child as usual.
   */
  async reattached(provider: SubagentProvider, parentId: string, key: string, runId: string): Promise<SubagentProvider | undefined> {
    const store = this.store()
    if (!store) return undefined
    const port = {
      store, holds: this.holds, log: this.log,
      recordOf: async (from: CheckpointStore, stored: StoredRun) => {
        const record = await this.recordOf(from, stored)
        // A take-over of a run that stopped waiting is put back, then ended here once let go: the task starts afresh.
        if (stored.state === 'parked' && pastDeadline(record.question)) {
          this.deadlines.watch(stored.id, record.question!, Date.now() + HELD_RETRY_MS)
          throw new SubagentError('NOT_PARKED', `Run ${stored.id} stopped waiting.`)
        }
        return record
      },
      forget: (id: string) => { this.parked.delete(id); this.deadlines.forget(id) },
    }
    const task = new TaskReattach(port, provider, parentId, key)
    return task.providerFor(await task.plan(runId))
  }

  private async recordOf(store: CheckpointStore, stored: StoredRun): Promise<RunRecord> {
    const { id } = stored
    if (stored.host !== store.host) {
      throw new SubagentError('NOT_FOUND', `Run ${id} belongs to host "${stored.host}", not this one ("${store.host}"); resume it there.`)
    }
    if (stored.state === 'running') {
      throw new SubagentError('NOT_PARKED',
        `Run ${id} is running (another resume is continuing it, or another start of this host runs it); wait for its outcome.`)
    }
    if (stored.state === 'settled') throw ended(stored)
    const question = stored.state === 'parked' ? await this.questionOf(store, id) : undefined
    if (stored.state === 'parked' && !question) {
      throw new SubagentError('NOT_PARKED', `Run ${id} is parked, but its question is no longer pending in the store.`)
    }
    if (stored.transcript === undefined) {
      throw new SubagentError('UNSUPPORTED',
        `Run ${id} has no stored checkpoint (its provider keeps none, or it was too large); it cannot be restored.`)
    }
    return {
      runId: id,
      provider: stored.provider,
      parentId: stored.parent,
      ...stored.label ? { label: stored.label } : {},
      depth: Math.max(1, stored.path.split('/').length - 1),
      state: stored.state,
      checkpoint: stored.transcript,
      ...question ? { question } : {},
    }
  }

  /**
   * Delegates through the service with the restore in place of the start. The parent agent of
   * the first start is gone: the restored child's parent is a fresh root agent of this host (its
   * runtime's default budget and tools), disposed once the run ends.
   */
  private async restore(
    stored: StoredRun, record: RunRecord, answer: string, putBack: () => Promise<unknown>, handedOver: (ended: Promise<unknown>) => void,
  ): Promise<SubagentOutcome> {
    const agents = this.ctx.get('agents') as { create(options: { label?: string }): Agent } | undefined
    if (!agents) {
      await putBack().catch(() => {})
      throw new SubagentError('UNSUPPORTED', `Run ${stored.id} cannot be restored: no agent runtime (ctx.agents) is loaded.`)
    }
    const parent = agents.create({ label: `restored parent of ${stored.id}` })
    const request: SubagentRequest = {
      prompt: `(run ${stored.id} restored after a restart)`,
      parent,
      signal: new AbortController().signal,
      ...record.label ? { label: record.label } : {},
    }
    let run: Delegation
    try {
      run = await (this.ctx.get('subagents') as Restorer).begin(stored.provider, request, { restore: record }).handle as Delegation
    } catch (error) {
      // Nothing was handed over: the run is as it was stored, for a later resume.
      await putBack().catch(() => {})
      await parent.dispose()
      throw error
    }
    handedOver(run.ended)
    void run.ended.then(() => run.dispose()).catch((error: unknown) => {
      this.log.warn('restored run %s: dispose failed: %s', stored.id, describeError(error))
    }).finally(() => parent.dispose())
    const first = await run.result
    if (first.stopReason === 'pending') return run.resume(answer)
    if (first.stopReason !== 'interrupted') {
      this.log.warn('restored run %s (%s) came back %s; the answer was not given', stored.id, record.state, first.stopReason)
      return first
    }
    // Idle on its last completed turn: the answer is a message, and a turn runs on it.
    const send = run.providerRun?.send
    if (typeof send !== 'function') {
      throw new SubagentError('UNSUPPORTED',
        `Provider "${stored.provider}" cannot take a message for restored run ${stored.id}, so it cannot run a new turn.`)
    }
    send.call(run.providerRun, answer)
    return run.verbs.wake()
  }

  private async questionOf(store: CheckpointStore, runId: string): Promise<PendingQuestion | undefined> {
    const [question] = await store.questions.pending({ runId })
    if (!question) return undefined
    try {
      const parsed = JSON.parse(question.question) as PendingQuestion
      // A deadline that is not a time (a damaged row) is no deadline: the run waits for an answer, as before deadlines.
      if (parsed.expiresAt !== undefined && !Number.isFinite(parsed.expiresAt)) delete parsed.expiresAt
      return parsed
    } catch {
      return undefined
    }
  }
}

/** A settled run never runs again: its resume is refused, naming how it ended and where its result is. */
function ended(stored: StoredRun): SubagentError {
  return new SubagentError('NOT_PARKED',
    `Run ${stored.id} ended (${stored.stopReason ?? 'settled'}) and never runs again; `
    + 'its result is in the checkpoint store (ctx.checkpoints.load).')
}
