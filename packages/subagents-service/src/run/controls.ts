import { describeError, type LazyAbort, limitStop } from '@cordis-subagents/shared'
import { capDiagnostic } from '../diagnostic.js'
import { SubagentError } from '../errors.js'
import type { Parking } from './parking.js'
import type { Admission, RunHost } from './run-host.js'
import { abandonStart, startFailed } from './start-failure.js'
import { sendFollowUp } from './steer.js'
import type { SubagentProvider, SubagentRequest, SubagentResult, SubagentRun, SubagentRunInfo, SubagentRunState } from '../types.js'

// A run's moves off its plain road (the `Delegation` extends this): a cancel (the holder's, the caller's
// signal, a limit), a follow-up message, a dispose that finds the result unsettled or fails, a refused start.

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
  protected abstract readonly aborter: LazyAbort
  /** Set while the provider's `start` is pending: a cancel rejects the start at once. */
  protected abstract stopWaitingForStart?: () => void
  protected abstract provider: SubagentProvider
  protected abstract readonly host: RunHost
  protected abstract readonly request: SubagentRequest
  protected abstract readonly parking: Parking
  protected abstract book?: Parking
  abstract readonly open: boolean
  protected abstract readonly admission: Admission
  protected abstract finish(raw: SubagentResult): void
  protected abstract detachCaller(): void

  /** Aborts the provider's signal and, after the hand-over, calls the run's `cancel` once. */
  protected stop(reason?: string, signalReason?: unknown): void {
    if (this.cancelled || this.phase === 'ended' || this.phase === 'rejected') return
    const idle = this.providerRun && this.state !== 'running'
    this.cancelled = true
    const stop = limitStop(signalReason)
    if (stop) this.limit = { stop, reason: signalReason }
    this.aborter.abort(signalReason ?? new SubagentError('ABORTED', reason ?? 'The run was cancelled.'))
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

  /** Rejects the start after the provider was called (so `subagent/start-failed` is emitted); `leftover`: what to clean up. */
  protected reject(error: SubagentError, leftover?: unknown): never {
    startFailed(this.host.events, this.id, this.provider.name, this.request, error)
    this.phase = 'rejected'
    this.detachCaller()
    abandonStart(this.host.log, this.provider.name, leftover, () => this.admission.refundAndRelease())
    throw error
  }

  /** An interrupted run takes messages for its next wake; a parked one waits for an answer instead. */
  send(message: string): void {
    sendFollowUp(this.providerRun, this.provider?.name, this.id, this.open && this.book?.state !== 'parked', message)
  }

  /** A run disposed before its result settled: gives a result that settles right after dispose a chance, then settles it. */
  protected async settleUndisposed(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve))
    const diagnostic = `Subagent provider "${this.provider.name}" disposed the run without settling its result.`
    this.finish({ stopReason: this.cancelled ? 'aborted' : 'error', output: '', diagnostic })
  }

  protected disposeFailed(failure: unknown): never {
    const message = `Subagent provider "${this.provider.name}" failed to dispose run ${this.id}: ${describeError(failure)}`
    throw new SubagentError('DISPOSE_FAILED', capDiagnostic(message), { cause: failure })
  }
}
