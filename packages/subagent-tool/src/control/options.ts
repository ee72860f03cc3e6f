import type { InFlight } from '../call-types.js'
import type { VerbNames } from '../verb-names.js'

/** What every control verb is built with: the names, the plugin's config, and the replies in flight. */
export interface VerbOptions {
  names: VerbNames
  /** Default wait (ms). */
  waitTimeout: number
  /** Longest wait the model may ask for (ms). */
  maxWaitTimeout: number
  /** How long a cancel waits for the child's last result (ms). */
  cancelGrace: number
  /** How long a send waits for a child that is still starting to be handed over (ms). */
  startWait: number
  /** How long a reply or continue waits for the child's next outcome before it cancels the child (ms; 0: no limit). */
  replyTimeout: number
  /** The replies in flight (the plugin cancels them at unload). */
  replies: Set<InFlight>
  /** Most bytes of output one result call returns. */
  pageBytes: number
}
