import { cancelWait, type WaitingHolder } from '../admission/waiters.js'
import { Delegation } from './delegation.js'
import { aborted } from './start-failure.js'
import type { Admission, RunHost, SideRoad } from './run-host.js'
import type { SubagentHandle, SubagentRequest, SubagentStart } from '../types.js'

/**
 * A start whose slots were not free: it owns the wait (admission's ticket waits in the gates) and
 * the cancel while it lasts, which rejects the start `ABORTED` with no provider called. Once the
 * slots are taken it makes the run (`Delegation`), which calls the provider; `handle` fulfils
 * with that run at the hand-over, and `cancel` / `dispose` are the run's from then on.
 */
export class PendingStart implements SubagentStart {
  readonly handle: Promise<SubagentHandle>
  /** The run, once the slots are taken. */
  run?: Delegation
  private cancelled = false

  constructor(request: SubagentRequest, host: RunHost, private readonly ticket: Admission & WaitingHolder, side?: SideRoad) {
    this.handle = ticket.waiting!.then(() => {
      if (this.cancelled) {
        // Cancelled in the moment between the grant and now: the slots go straight back.
        ticket.refundAndRelease()
        throw aborted('while the start was waiting for a slot')
      }
      return (this.run = new Delegation(request, host, ticket, side)).handle
    })
  }

  readonly cancel = (reason?: string | Error): void => {
    if (this.run) return this.run.cancel(reason)
    this.cancelled = true
    cancelWait(this.ticket, reason)
  }

  /** Before the run exists, the start's cancel; then the run's dispose. */
  readonly dispose = (): Promise<void> => {
    if (this.run) return this.run.dispose()
    this.cancel('The run was disposed.')
    return Promise.resolve()
  }

  /** Whether the start was refused or cancelled (nothing is left to reattach to). */
  get rejected(): boolean {
    return this.run ? this.run.rejected : this.cancelled
  }
}
