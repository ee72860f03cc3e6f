import type { Logger } from 'cordis'
import { headChars } from '@cordis-subagents/shared'

/**
 * How spares are being replenished: `ready` (normally), `backing-off` (a spare failed; the next
 * one waits until `retryAt`), `paused` (`maxSpareFailures` in a row failed: none are started until
 * a run starts a process successfully, or the plugin is reloaded), `off` (`warm` is off).
 */
export interface SpareStatus {
  state: 'off' | 'ready' | 'backing-off' | 'paused'
  /** Spares in a row that failed to start or died by themselves while waiting. */
  failuresInARow: number
  /** While backing off: the wall-clock time (`Date.now()` scale, for display) after which the next spare may start. */
  retryAt?: number
  /** Why the latest spare failed (exit code or error, and the scrubbed stderr tail), at most 2000 characters. */
  lastFailure?: string
}

/** After the n-th spare failure in a row the next spare waits `min(BASE · 2^(n-1), MAX)` ms. */
export const SPARE_RETRY_BASE_MS = 500
const SPARE_RETRY_MAX_MS = 30_000
const FAILURE_TEXT_LIMIT = 2000

/** Spares that fail in a row: the next one waits longer (exponential, bounded), and after `max` none start. */
export class SpareBackoff {
  private failures = 0
  /** `performance.now()` before which no spare is started. */
  private retryAt = 0
  private lastFailure?: string

  constructor(private readonly max: number, private readonly logger: Logger, private readonly providerName: string) {}

  get paused(): boolean {
    return this.failures >= this.max
  }

  /** Milliseconds before the next spare may start (0: now). */
  wait(): number {
    return this.failures > 0 ? Math.max(0, this.retryAt - performance.now()) : 0
  }

  status(warm: boolean): SpareStatus {
    const status: SpareStatus = { state: 'ready', failuresInARow: this.failures }
    const wait = this.wait()
    if (!warm) status.state = 'off'
    else if (this.paused) status.state = 'paused'
    else if (wait > 0) {
      status.state = 'backing-off'
      status.retryAt = Math.round(Date.now() + wait)
    }
    if (this.lastFailure !== undefined) status.lastFailure = this.lastFailure
    return status
  }

  /** A run got a process that works: spares are replenished normally again. */
  succeeded(warm: boolean): void {
    if (this.paused && warm) this.logger.info('%s: a run started an agent process successfully; spares are started again', this.providerName)
    this.failures = 0
    this.retryAt = 0
  }

  /** A spare failed to start, or died by itself while waiting (logged once when spares pause). */
  failed(reason: string): void {
    this.failures++
    this.lastFailure = reason.length > FAILURE_TEXT_LIMIT ? headChars(reason, FAILURE_TEXT_LIMIT - 1, '…') : reason
    this.retryAt = performance.now() + Math.min(SPARE_RETRY_BASE_MS * 2 ** (this.failures - 1), SPARE_RETRY_MAX_MS)
    if (this.failures === this.max) {
      this.logger.warn('%s: %d spare agent processes in a row failed to start or died right after starting; no more spares are '
        + 'started until a run starts a process successfully or the plugin is reloaded. Last failure: %s',
      this.providerName, this.failures, this.lastFailure)
    } else {
      this.logger.debug('%s: a spare agent process failed (%d in a row): %s', this.providerName, this.failures, this.lastFailure)
    }
  }
}
