import type { Logger } from 'cordis'
import type { Budget } from '@cordis-subagents/agent'
import type { SubagentEvents } from '../events.js'
import type { RunJournal } from '../durable/journal.js'
import type { TraceSources } from './trace-sources.js'
import type { Slot } from '../admission/tree-gate.js'
import type { SlotHolder } from '../admission/slot-holders.js'
import type { Delegation } from './delegation.js'

/** A start the service admitted: its place in the tree and the slots it holds. */
export interface Admission {
  depth: number
  /** The deepest depth allowed below this parent. */
  ceiling: number
  parentBudget?: Budget
  /** The tree gate's slot (only for a parent with a budget). */
  slot?: Slot
  /** The per-parent gate's key: the parent agent. */
  gateKey: object
  /** The run that holds the slots (named when a start waits for them). */
  holder: SlotHolder
}

/** A run handed over and not yet disposed, as the service's host verbs see it. */
export type LiveRun = Delegation

/** Calls one journal hook; a hook that throws is logged and ignored. */
export type JournalNote = <K extends Exclude<keyof RunJournal, 'reopen' | 'pending' | 'reattached' | 'recorded'>>(
  hook: K, ...args: Parameters<NonNullable<RunJournal[K]>>) => void

/** What a run needs of the service that started it. */
export interface RunHost {
  events: SubagentEvents
  log: Logger
  /** Runs handed over and not yet disposed. */
  live: Map<string, LiveRun>
  /** The tree slot each delegated run holds, keyed by its budget: its own children may borrow it. */
  slots: WeakMap<Budget, Slot>
  /** Where a delegation without a trace context may get one (a tracing plugin). */
  traces: TraceSources
  /** Frees an admission's gate slots (once per admission). */
  release(admission: Admission): void
  /** Gives the parent back the delegation its admission was charged. */
  refund(admission: Admission): void
  /** Records the run's life in the service's journal (`NO_JOURNAL` without durable storage). */
  note: JournalNote
  /** Calls `then` once the journal has recorded run `runId`'s writes so far (bounded), at once when nothing is queued. */
  afterRecorded(runId: string, then: () => void): void
}
