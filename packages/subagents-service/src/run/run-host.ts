import type { Logger } from 'cordis'
import type { Budget } from '@cordis-subagents/agent'
import type { EventSink } from '../events.js'
import type { JournalNote } from './journal-port.js'
import type { TraceSources } from './trace-sources.js'
import type { SubagentProvider, SubagentRequest, SubagentRunInfo, SubagentRunState } from '../types.js'

/** What the slot holders' descriptions read of the run that uses an admission's slots. */
export interface SlotUser {
  readonly state: SubagentRunState
  readonly info?: SubagentRunInfo
}

/**
 * A start admission let through (`Admitted`, admission/admission.ts): the run's id, its place in the tree, the
 * provider to call, and the one way its slots go back.
 */
export interface Admission {
  readonly id: string
  readonly provider: SubagentProvider
  /** Set by the run once it exists: the slots are then held in its name. */
  run?: SlotUser
  depth: number
  /** The deepest depth allowed below this parent. */
  ceiling: number
  parentBudget?: Budget
  /** The child's budget, carved from the parent's once the slots are taken (its own children may borrow the tree slot). */
  readonly budget?: Budget
  /** Frees the admission's gate slots (once; a second call does nothing). */
  release(): void
  /** Gives the parent back the delegation it was charged, then frees the slots (a start that handed nothing over). */
  refundAndRelease(): void
  /** While the start waits for its slots (see `PendingStart`; ended by `cancelWait`, admission/waiters.ts): fulfils once they are taken. */
  readonly waiting?: Promise<void>
}

/** A request admission's checks passed: its place in the tree (`ceiling`: the deepest depth below its parent), trace context, provider. */
export interface Checked {
  depth: number
  parentBudget?: Budget
  ceiling: number
  traceContext?: SubagentRequest['traceContext']
  provider: SubagentProvider
}

/** How a start off the plain road differs (a continue, a restore, a reattach); none on the plain road. */
export interface SideRoad {
  /** The provider start it calls instead of the admitted provider's own (a continue's, a restore's, a reattach's). */
  choose?: (provider: SubagentProvider, runId: string) => SubagentProvider | Promise<SubagentProvider>
  /** The task key it is started under (reattach). */
  reattachKey?: string
  /** A new turn of a run that ended (`ctx.subagents.continue`): its record goes from ended to running. */
  continues?: boolean
}

/** What a run needs of the service that started it. */
export interface RunHost {
  events: EventSink
  log: Logger
  /** Runs handed over and not yet disposed, by id (each run puts itself in at the hand-over and takes itself out). */
  live: Map<string, object>
  /** Where a delegation without a trace context may get one (a tracing plugin). */
  traces: TraceSources
  /** Records the run's life in the journal a durable store put in place; does nothing without one. */
  note: JournalNote
  /** Calls `then` once the journal has recorded run `runId`'s writes so far (bounded); at once without a journal. */
  afterRecorded(runId: string, then: () => void): void
}
