import type { Redactor } from '@cordis-subagents/shared'
import type { A2aWire } from './wire.js'

/** What every run of one provider shares: the wire, the limits, the redactor. */
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
  /** Every run of the provider not yet disposed, starting ones included: stopped when the plugin is. */
  live: Set<LiveRun>
}

/** A run as the provider sees it: `stop()` closes its requests at once (starting) or disposes it. */
export interface LiveRun {
  stop(): Promise<void>
}
