import type { Logger } from 'cordis'
import { describeError } from '@cordis-subagents/shared'
import { capDiagnostic } from '../diagnostic.js'
import { SubagentError } from '../errors.js'
import type { CheckpointStore, StoredRun } from './journal-store.js'
import { wokenOnReattach } from './reattach-wake.js'
import { type StoredRunHolds, successorOf, takenOverNote } from './stored-run-holds.js'
import type { ProviderStartRequest, RunRecord, SubagentProvider, SubagentResult, SubagentRun } from '../types.js'

// A re-run with `reattach: true` after a restart: what its task key names in the store decides
// whether it gives a recorded result again, takes a parked or interrupted run over (restored as the
// re-run's run), waits for a resume that is continuing that run in this process, or starts a child.
// The take-over moves the stored run with the store's compare-and-set and commits only once the
// restore handed the run over: a failed restore leaves the task as it was.

/** What a re-run needs of `StoredRuns`. */
export interface ReattachPort {
  readonly store: CheckpointStore
  readonly holds: StoredRunHolds
  readonly log: Logger
  /** The restore record of `stored` (rejects when it cannot be restored). */
  recordOf(store: CheckpointStore, stored: StoredRun): Promise<RunRecord>
  /** Drops run `runId` from the stored parked runs `pending()` lists. */
  forget(runId: string): void
}

type Claim = { key: string; runId: string }
type Plan =
  | { kind: 'fresh' }
  | { kind: 'replay'; claim: Claim; stored: StoredRun }
  | { kind: 'wait'; runId: string }
  | { kind: 'take'; claim: Claim; stored: StoredRun }
  | { kind: 'refuse'; error: SubagentError }

const FRESH: Plan = { kind: 'fresh' }
/** Looks at the store again at most this often for one re-run (a wait, a lost compare-and-set), then refuses. */
const MAX_LOOKS = 8
/** Runs taken over in a row the look-up follows (a key still naming a run a re-run took over). */
const MAX_HOPS = 3


export class TaskReattach {
  constructor(
    private readonly port: ReattachPort,
    private readonly provider: SubagentProvider,
    private readonly parentId: string,
    private readonly key: string,
  ) {}

  /**
   * What the store holds for the task; `runId` is the re-run's own run, `contended` one whose take-over just lost the
   * store's compare-and-set. A store that cannot be read: a child is started.
   */
  async plan(runId: string, contended?: string): Promise<Plan> {
    const { store, log } = this.port
    try {
      return await this.look(store, runId, contended)
    } catch (error) {
      log.warn('task key %s: the store could not be read for a reattach (a child is started): %s', this.key, describeError(error))
      return FRESH
    }
  }

  /** The provider the re-run starts through (its `start` acts on `plan`); undefined: start a child as usual. */
  providerFor(plan: Plan): SubagentProvider | undefined {
    if (plan.kind === 'fresh') return undefined
    return Object.assign(Object.create(this.provider) as SubagentProvider, {
      start: (request: ProviderStartRequest) => this.act(plan, request, 1),
    })
  }

  private async look(store: CheckpointStore, runId: string, contended?: string): Promise<Plan> {
    const claim = await store.tasks.get({ parent: this.parentId, provider: this.provider.name, agent: '', prompt: this.key })
    if (!claim || claim.runId === runId) return FRESH
    let stored = await store.load(claim.runId)
    // A claim whose run was never recorded (the host stopped between the two writes): the new run takes the key.
    if (!stored) {
      await store.tasks.release(claim.key, claim.runId)
      return FRESH
    }
    // The key still names a run a re-run took over (its host stopped before the new run's claim): follow it.
    for (let hop = 0, next = successorOf(stored); next && hop < MAX_HOPS; hop++, next = successorOf(stored)) {
      const successor = next === runId ? undefined : await store.load(next)
      if (!successor) return FRESH
      stored = successor
    }
    if (stored.host !== store.host) return FRESH
    // A resume (or another re-run) is continuing it here: wait for it, then look again.
    if (this.port.holds.get(stored.id)) return { kind: 'wait', runId: stored.id }
    if (stored.state === 'settled' || stored.state === 'closed') {
      const kept = (stored.stopReason === 'completed' || stored.stopReason === 'closed') && !successorOf(stored)
      return kept ? { kind: 'replay', claim, stored } : FRESH
    }
    // Taken by a resume of another start of this host (on a shared database) while this re-run tried: no second child.
    if (stored.state === 'running' && stored.id === contended) return { kind: 'refuse', error: runningElsewhere(stored.id) }
    const restorable = (stored.state === 'parked' || stored.state === 'interrupted') && typeof this.provider.restore === 'function'
    return restorable && stored.transcript !== undefined ? { kind: 'take', claim, stored } : FRESH
  }

  private async act(plan: Plan, request: ProviderStartRequest, looks: number): Promise<SubagentRun> {
    if (plan.kind === 'fresh') return this.provider.start(request)
    if (plan.kind === 'replay') return this.replay(plan.claim, plan.stored, request)
    if (plan.kind === 'take') return this.takeOver(plan.claim, plan.stored, request, looks)
    if (plan.kind === 'refuse') throw plan.error
    await this.port.holds.released(plan.runId, request.abortScope)
    return this.again(request, looks)
  }

  /** The store changed under this re-run (a resume took the run, or let it go): looks again, at most `MAX_LOOKS` times. */
  private async again(request: ProviderStartRequest, looks: number, contended?: string): Promise<SubagentRun> {
    if (request.abortScope?.aborted) throw new SubagentError('ABORTED', 'The re-run was cancelled before it started; nothing was started.')
    if (looks >= MAX_LOOKS) {
      throw new SubagentError('NOT_PARKED', `Task key ${this.key}: the run recorded for it changed ${looks} times while this re-run `
        + 'tried to continue it (other resumes or hosts are continuing it); wait for their outcome, then re-run the task.')
    }
    return this.act(await this.plan(request.runId, contended), request, looks + 1)
  }

  /** The recorded result again (no child runs); the re-run's run takes the key (the journal claims it at its start). */
  private async replay(claim: Claim, stored: StoredRun, request: ProviderStartRequest): Promise<SubagentRun> {
    const { store, log } = this.port
    await store.tasks.release(claim.key, claim.runId).catch((error: unknown) =>
      log.warn('run %s: its task key was not released (the re-run gives its result anyway): %s', claim.runId, describeError(error)))
    const result: SubagentResult = {
      stopReason: stored.stopReason as 'completed' | 'closed', output: stored.result ?? '',
      usage: stored.usage as never, work: stored.work as never,
    }
    return { id: request.runId, result: Promise.resolve(result), cancel: () => {}, dispose: async () => {} }
  }

  /**
   * Restores `stored` as the re-run's run: the store's compare-and-set moves it to `running` first
   * (a resume by run id, here or on another start of this host, is refused then); the old record is
   * closed as "continued as run …", its question cancelled and its key released only once the
   * provider handed the restored run over. A restore that rejects puts the run back as it was.
   */
  private async takeOver(claim: Claim, stored: StoredRun, request: ProviderStartRequest, looks: number): Promise<SubagentRun> {
    const { store, holds, log } = this.port
    // A resume came between the look-up and this start.
    if (holds.get(stored.id)) return this.act({ kind: 'wait', runId: stored.id }, request, looks)
    const successor = request.runId
    const letGo = holds.take(stored.id, { by: 'take-over', successor })
    try {
      if (!await store.transition(stored.id, stored.state, 'running')) {
        letGo()
        return await this.again(request, looks, stored.id)
      }
      const putBack = () => store.transition(stored.id, 'running', stored.state).then((moved) => {
        if (!moved) log.warn('run %s: could not be put back to %s after its take-over failed (it moved meanwhile)', stored.id, stored.state)
      }, (error: unknown) => log.warn('run %s: could not be put back to %s: %s', stored.id, stored.state, describeError(error)))
      let record: RunRecord
      try {
        // Read again once it is ours: the record as it is now (another start may have continued it since the look-up).
        const current = await store.load(stored.id)
        if (!current) throw new SubagentError('NOT_FOUND', `Run ${stored.id} is gone from the store.`)
        record = { ...await this.port.recordOf(store, { ...current, state: stored.state }), runId: successor }
      } catch (error) {
        await putBack()
        letGo()
        log.warn('task key %s: run %s cannot be restored (a child is started): %s', this.key, stored.id, describeError(error))
        return await this.provider.start(request)
      }
      let run: SubagentRun
      try {
        run = await wokenOnReattach(Promise.resolve(this.provider.restore!.call(this.provider, record, request)), successor)
      } catch (error) {
        await putBack()
        throw notTakenOver(stored, this.provider.name, 'could not be restored', error)
      }
      // Cancelled meanwhile: the service stops and disposes the run; the stored one stays as it was.
      if (request.abortScope?.aborted) {
        await putBack()
        return run
      }
      await this.commit(claim, stored, record, successor, run, putBack)
      return run
    } finally {
      letGo()
    }
  }

  /** The old record closed as continued by `successor` (one compare-and-set: the commit), then its key and question let go. */
  private async commit(
    claim: Claim, stored: StoredRun, record: RunRecord, successor: string, run: SubagentRun, putBack: () => Promise<void>,
  ): Promise<void> {
    const { store, log } = this.port
    let failure: unknown
    try {
      if (await store.transition(stored.id, 'running', { state: 'closed', stopReason: 'closed', result: takenOverNote(successor) })) {
        // Committed: what follows only tidies (a key left on the old run is followed to `successor`).
        await store.tasks.release(claim.key, claim.runId).catch((error: unknown) =>
          log.warn('run %s: its task key was not released: %s', claim.runId, describeError(error)))
        if (record.question) await store.questions.cancel(`${stored.id}:${record.question.id}`).catch(() => {})
        this.port.forget(stored.id)
        return
      }
      failure = new Error('its record moved meanwhile (another start of this host)')
    } catch (error) {
      failure = error
    }
    await putBack()
    Promise.resolve(run.result).catch(() => {})
    run.cancel('The take-over of its stored run was not recorded.')
    await Promise.resolve(run.dispose()).catch(() => {})
    throw notTakenOver(stored, this.provider.name, 'was restored, but its take-over could not be recorded', failure)
  }
}

function runningElsewhere(runId: string): SubagentError {
  return new SubagentError('NOT_PARKED', `Run ${runId}, this task's run, was taken by another start of this host (a resume) `
    + 'while this re-run tried to continue it, and is running there; no second child was started. Wait for its outcome, '
    + 'then re-run the task: it gives that result.')
}

function notTakenOver(stored: StoredRun, provider: string, what: string, cause: unknown): SubagentError {
  return new SubagentError('PROVIDER_START_FAILED', capDiagnostic(`Run ${stored.id}, this task's ${stored.state} run, ${what} `
    + `(provider "${provider}"): ${describeError(cause)}. Nothing was taken over: run ${stored.id} is ${stored.state} as it was; `
    + `re-run the task (reattach) or resume run ${stored.id} once its provider can restore it.`), { cause })
}
