import type { Budget } from '@cordis-subagents/agent'
import { describeError, limitStop } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import { isEmptyUsage, overspent } from './limit-stops.js'
import type { Parking } from './parking.js'
import type { Admission, RunHost } from './run-host.js'
import { abandonStart, startFailed } from './start-failure.js'
import type { SubagentProvider, SubagentRequest, SubagentResult, SubagentRun, SubagentRunInfo, SubagentRunState, SubagentUpdate } from '../types.js'

// A run's moves off its plain road (the `Delegation` extends this): a cancel (the holder's, the caller's
// signal, a limit), the provider's updates, and a start that handed nothing over.

/**
 * `starting`: the provider's `start` is pending (updates are buffered until the hand-over); `live`: handed
 * over; `rejected`: the start rejected, nothing was handed over; `ended`: `subagent/end` was emitted (the
 * run may still await `dispose`).
 */
export type Phase = 'starting' | 'live' | 'rejected' | 'ended'

export abstract class RunControls {
  abstract readonly id: string
  abstract info: SubagentRunInfo
  abstract providerRun?: SubagentRun
  abstract readonly state: SubagentRunState
  protected abstract phase: Phase
  protected abstract cancelled: boolean
  /** Set when a limit (a timeout, a budget), not a person, cancelled the run. */
  protected abstract limit?: { stop: 'timeout' | 'budget'; reason: unknown }
  protected abstract readonly controller: AbortController
  /** Set while the provider's `start` is pending: a cancel rejects the start at once. */
  protected abstract stopWaitingForStart?: () => void
  /** Updates sent before the hand-over (rare: most providers report progress only once running). */
  protected abstract pending?: SubagentUpdate[]
  protected abstract provider: SubagentProvider
  protected abstract budget?: Budget
  protected abstract readonly host: RunHost
  protected abstract readonly request: SubagentRequest
  protected abstract readonly parking: Parking
  protected abstract readonly admission: Admission
  protected abstract finish(raw: SubagentResult): void
  protected abstract detachCaller(): void
  /** Charges a child's reported running totals to its budget, if it has one. */
  protected abstract charge(usage: unknown, work: unknown): void

  /** Aborts the provider's signal and, after the hand-over, calls the run's `cancel` once. */
  protected stop(reason?: string, signalReason?: unknown): void {
    if (this.cancelled || this.phase === 'ended' || this.phase === 'rejected') return
    const idle = this.providerRun && this.state !== 'running'
    this.cancelled = true
    const stop = limitStop(signalReason)
    if (stop) this.limit = { stop, reason: signalReason }
    this.controller.abort(signalReason ?? new SubagentError('ABORTED', reason ?? 'The run was cancelled.'))
    this.stopWaitingForStart?.()
    if (!this.providerRun) return
    try {
      this.providerRun.cancel(reason)
    } catch (error) {
      this.host.log.warn('provider %s: cancel() of run %s threw: %s', this.provider.name, this.id, describeError(error))
    }
    // An idle run has no turn whose end would settle it: it ends here.
    if (idle) this.finish(this.parking.cancelled(reason))
  }

  /** The provider's `onUpdate`. */
  protected update(update: SubagentUpdate): void {
    if (this.phase === 'ended' || this.phase === 'rejected') return
    if (update?.kind === 'usage') {
      if (isEmptyUsage(update)) return
      this.charge(update.usage, update.work)
      const stop = this.budget && overspent(this.budget)
      if (stop) this.stop(undefined, stop)
    }
    const forward = this.request.onUpdate
    try {
      forward?.(update)
    } catch (error) {
      this.host.log.warn('onUpdate of run %s threw: %s', this.id, describeError(error))
    }
    if (this.phase === 'starting') (this.pending ??= []).push(update)
    else if (this.host.events.has('subagent/update')) this.host.events.emit('subagent/update', this.info, update)
  }

  /** Rejects the start after the provider was called (so `subagent/start-failed` is emitted); `leftover`: what to clean up. */
  protected reject(error: SubagentError, leftover?: unknown): never {
    startFailed(this.host.events, this.id, this.provider.name, this.request, error)
    this.phase = 'rejected'
    this.detachCaller()
    abandonStart(this.host.log, this.provider.name, leftover, () => this.admission.refundAndRelease())
    throw error
  }
}
