import type { Budget } from '@cordis-subagents/agent'
import { onAbort } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type { Admission, SlotUser } from '../run/run-host.js'
import type { SubagentProvider, SubagentRequest, SubagentRunState } from '../types.js'
import type { Checked } from './limits.js'
import type { SlotHolder } from './slot-holders.js'
import type { Slot } from './tree-gate.js'

// The ticket admission gives a start: the run's id, its place in the tree, the provider to call,
// and its slots until `release`, the one place they go back.

/**
 * Run ids only need to be unique among the runs of this process: they key the service's `live`
 * map, events and tool metadata here, and never name anything in another process or on disk
 * (an ACP child gets its own session id). A counter per process is unique there, and far cheaper
 * than a random UUID per run; the start time keeps ids of two processes in one log apart.
 */
const RUN_ID_PREFIX = `run-${Date.now().toString(36)}-`
let runCount = 0

export function nextRunId(): string {
  return RUN_ID_PREFIX + (++runCount).toString(36)
}

/** Where a ticket's slots go back: the admissions that issued it. */
export interface SlotOwner {
  free(ticket: Admitted, slot: Slot | undefined, lentBy: Budget | undefined): void
  lend(budget: Budget, slot: Slot): void
}

/**
 * A start admission let through. It holds the slots in the gates from admission on (a refusal or a
 * timeout names it by its run id, and by the state of the run once one uses it). A start whose
 * slots were not free has `waiting` until they are taken; its `cancelWait` (the start's cancel)
 * and the caller's signal end that wait.
 */
export class Admitted implements Admission, SlotHolder {
  readonly depth: number
  readonly ceiling: number
  readonly parentBudget?: Budget
  readonly traceContext?: SubagentRequest['traceContext']
  provider: SubagentProvider
  /** While the start waits for its slots: fulfils once they are taken, rejects with the refusal (nothing held then). */
  waiting?: Promise<void>
  /** The run using the slots, once it exists. */
  run?: SlotUser
  /** The tree slot, once taken. */
  slot?: Slot
  private released = false
  private lentBy?: Budget
  private wait?: { controller: AbortController; stop: () => void }

  constructor(
    checked: Checked, readonly id: string, readonly gateKey: object, private readonly callerSignal: AbortSignal,
    private readonly owner: SlotOwner,
  ) {
    this.depth = checked.depth
    this.ceiling = checked.ceiling
    this.parentBudget = checked.parentBudget
    this.traceContext = checked.traceContext
    this.provider = checked.provider
  }

  get state(): SubagentRunState { return this.run ? this.run.state : 'running' }
  get info(): { readonly label?: string } | undefined { return this.run?.info }

  /** What a wait for slots aborts on: the caller's signal or `cancelWait`. Made on the first wait (most starts never wait). */
  waitSignal(): AbortSignal {
    if (this.wait) return this.wait.controller.signal
    const controller = new AbortController()
    const stop = onAbort(this.callerSignal, () => controller.abort(this.callerSignal.reason))
    this.wait = { controller, stop }
    return controller.signal
  }

  /** The start's cancel while it waits for its slots. */
  cancelWait(reason?: string | Error): void {
    this.wait?.controller.abort(reason instanceof Error ? reason : new SubagentError('ABORTED', reason ?? 'The run was cancelled.'))
  }

  /** The wait is over: lets go of the caller's signal; true when the wait was aborted. */
  endWait(): boolean {
    if (!this.wait) return false
    this.wait.stop()
    return this.wait.controller.signal.aborted
  }

  lend(budget: Budget): void {
    if (!this.slot || this.released) return
    this.lentBy = budget
    this.owner.lend(budget, this.slot)
  }

  release(): void {
    if (this.released) return
    this.released = true
    this.owner.free(this, this.slot, this.lentBy)
  }

  refundAndRelease(): void {
    this.parentBudget?.charge('children', -1)
    this.release()
  }
}
