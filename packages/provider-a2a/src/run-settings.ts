import type { Redactor } from '@cordis-subagents/shared'
import type { A2aWire } from './wire.js'

/** What every run of one provider shares: the wire, the limits, the redactor; a run that outlives the provider's load keeps it. */
export interface RunSettings {
  /** The remote's protocol version, spoken by its SDK's client. */
  wire: A2aWire
  /** The card says the agent streams: a streamed send; else a send + task polls. */
  streaming: boolean
  /** For diagnostics: the agent card's name and where it is. */
  agentName: string
  requestTimeout: number
  idleTimeout: number
  pollInterval: number
  /** A polled task showing no change this long has failed silently. */
  stuckTimeout: number
  cancelGrace: number
  /** How long a parked run (its task waiting for our answer) is kept before its task is cancelled; 0: no limit. */
  parkedTimeout: number
  maxOutputBytes: number
  redactor: Redactor
  /** Debug log (the plugin's logger); the provider logs what it ignored there. */
  debug: (format: string, ...args: unknown[]) => void
  /** The provider's runs not yet handed over (starting, or reattaching): stopped when the plugin is disposed. */
  starting: Set<LiveRun>
  /**
   * Holds what the run's requests go over (the provider's send connections) past the provider's
   * dispose, until the function it returns is called (at the run's dispose). `undefined` once the
   * provider was disposed: it starts no new task.
   */
  hold: () => (() => Promise<void>) | undefined
}

/** A run still starting, as the provider sees it: `stop()` closes its requests at once, or disposes it once its task is named. */
export interface LiveRun {
  stop(): Promise<void>
}
