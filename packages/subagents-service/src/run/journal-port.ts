import type { PendingQuestion } from '@cordis-subagents/shared'
import type { SubagentOutcome, SubagentProvider, SubagentRunInfo, SubagentStopReason } from '../types.js'

// What a run tells a journal, and the journal of a host without durable storage. The run and the
// host verbs know a journal by this port only; durable/ implements it with ctx.checkpoints.

/** A parked run as `ctx.subagents.pending()` lists it. */
export interface ParkedRunInfo {
  runId: string
  parentId: string
  question: PendingQuestion
}

/**
 * What the journal sees of a run: its identity, and the provider's checkpoint when it has one
 * (`SubagentRun.checkpoint`, JSON). The service's `Delegation` is one.
 */
export interface JournalledRun {
  readonly id: string
  readonly info: SubagentRunInfo
  /** The task key the run was started under (see `reattachKey`), when it had one. */
  readonly reattachKey?: string
  /** A new turn of a run that ended (`ctx.subagents.continue`), under its id: its record is taken back from ended to running. */
  readonly continues?: boolean
  /** The provider run's checkpoint (JSON), or undefined when its provider cannot checkpoint. */
  checkpoint(): unknown
}

/**
 * Where the service records the life of each run, so a restarted host can find its parked and
 * background children. The service calls every hook synchronously and never awaits it; a hook
 * must not throw (the service logs and ignores one that does). Without `ctx.checkpoints` the
 * service uses `NO_JOURNAL`.
 */
export interface RunJournal {
  /** The run was handed over and is running. */
  started(run: JournalledRun): void
  /** The run parked on `question` (checkpoint its transcript now). */
  parked(run: JournalledRun, question: PendingQuestion): void
  /** The parked run goes on with `answer` to question `questionId`. */
  resumed(run: JournalledRun, questionId: string, answer: string): void
  /**
   * Optional: the parked run goes on past question `questionId` without an answer (it was withdrawn:
   * whoever asked it ended); the question will never be answered.
   */
  withdrawn?(run: JournalledRun, questionId: string): void
  /** The run ended (any final outcome, `closed` included). */
  settled(run: JournalledRun, outcome: SubagentOutcome): void
  /**
   * Optional: continues a run this host no longer has live (parked, interrupted or closed before a
   * restart) with `answer`, through its provider's `restore`: a parked run takes it as the answer
   * to its question, an interrupted or closed one runs a new turn with it. Fulfils with the run's
   * next outcome; undefined when the journal has no such run (journal-restore.ts).
   */
  reopen?(runId: string, answer: string): Promise<SubagentOutcome | undefined>
  /** Optional: parked runs of earlier starts of this host (not live in this process). */
  pending?(): ParkedRunInfo[]
  /**
   * Optional: for a delegation started under task key `key` that this process has no run for,
   * the provider to call instead of `provider` when an earlier start recorded that task (its
   * result again, or its child restored), so a host restart never spawns it twice; undefined to
   * start a child as usual. Never rejects.
   */
  reattached?(provider: SubagentProvider, parentId: string, key: string, runId: string): Promise<SubagentProvider | undefined>
  /**
   * Optional: resolves once every write queued so far for run `runId` has run (or failed), within
   * a bound; undefined when none is queued. The service hands a run's outcome to its holders only
   * then, so an outcome a caller saw is in the store even if the host stops right after.
   */
  recorded?(runId: string): Promise<void> | undefined
  /**
   * Optional: before a continue's new turn of run `runId` (which ended as `endedAs`) starts, takes the run's record
   * back from ended to running in the store (a compare-and-set), so a resume by run id or a continue on another host
   * of the same run is refused, never run at once. Rejects `NOT_SETTLED` when the store has the run in another state
   * (the one hook that may reject: the continue is refused); undefined when there is nothing to claim.
   */
  claimContinue?(runId: string, endedAs: SubagentStopReason): Promise<ContinueClaim | undefined>
}

/** A continue's claim on its run's record: `release` puts the record back as it was when the new turn did not start after all. */
export interface ContinueClaim {
  release(): Promise<void>
}

/** The journal of a host without durable storage: records nothing. */
export const NO_JOURNAL: RunJournal = Object.freeze({
  started() {},
  parked() {},
  resumed() {},
  settled() {},
})

/** Calls one journal hook; a hook that throws is logged and ignored. */
export type JournalNote = <K extends Exclude<keyof RunJournal, 'reopen' | 'pending' | 'reattached' | 'recorded' | 'claimContinue'>>(
  hook: K, ...args: Parameters<NonNullable<RunJournal[K]>>) => void
