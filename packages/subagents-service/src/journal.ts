import type { PendingQuestion } from '@cordis-subagents/shared'
import type { SubagentHandle, SubagentOutcome, SubagentRunInfo } from './types.js'

/**
 * What the journal sees of a run: its identity, and the provider's checkpoint when it has one
 * (`SubagentRun.checkpoint`, JSON). The service's `Delegation` is one.
 */
export interface JournalledRun {
  readonly id: string
  readonly info: SubagentRunInfo
  /** The task key the run was started under (see `taskKey`), when it had one. */
  readonly taskKey?: string
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
  /** The run ended (any final outcome, `closed` included). */
  settled(run: JournalledRun, outcome: SubagentOutcome): void
  /**
   * Optional: brings back a run this host no longer has live (parked or closed before a restart)
   * from its record, through its provider's `restore`, so `ctx.subagents.resume(runId, …)` can
   * continue it. Undefined when the journal has no such run.
   */
  reopen?(runId: string): Promise<SubagentHandle | undefined>
}

/** What a journal keeps of a run, and what a provider's `restore` rebuilds the child from. */
export interface RunRecord {
  runId: string
  provider: string
  parentId: string
  label?: string
  depth: number
  state: 'running' | 'parked' | 'interrupted' | 'settled' | 'closed'
  /** The provider run's `checkpoint()` (JSON). */
  checkpoint?: unknown
  question?: PendingQuestion
  taskKey?: string
}

/** The journal of a host without durable storage: records nothing. */
export const NO_JOURNAL: RunJournal = Object.freeze({
  started() {},
  parked() {},
  resumed() {},
  settled() {},
})
