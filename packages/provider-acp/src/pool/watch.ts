import type { Redactor } from '@cordis-subagents/shared'
import type { AgentSlot } from '../agent-slot.js'
import { describeExit } from '../process.js'
import { stderrSection } from '../result.js'
import type { Entry } from './pool-entry.js'

/** What the pool lends `watchEntry`: its entry for a process, and how it stops one and counts a failed spare. */
export interface WatchHooks {
  entry(slot: AgentSlot): Entry | undefined
  /** Stops the process without a refill of its own (the failure's back-off schedules the replacement). */
  retire(entry: Entry): void
  spareFailed(reason: string): void
}

/**
 * A process no run holds (a spare, starting or waiting, or one a run gave back) that dies by itself, or
 * passes maxStreamBytes or the input backlog, is stopped and counts as a failed spare: it is replaced
 * after the back-off, never in a loop, and never handed out. A run's own process is its run's business.
 */
export function watchEntry(slot: AgentSlot, redactor: Redactor, hooks: WatchHooks) {
  void slot.proc.exited.then(async () => {
    const entry = hooks.entry(slot)
    // A spare that died while starting is settled first (a failed initialize is reported there).
    await entry?.ready
    if (!entry || entry.state !== 'idle' || entry.stopping) return
    hooks.retire(entry)
    const exit = await slot.proc.settledExit
    hooks.spareFailed(`the process ${describeExit(exit)} while it waited for a run${stderrSection(slot.proc.stderrTail(), redactor)}`)
  })
  slot.onUnheldOverflow = () => {
    const entry = hooks.entry(slot)
    if (!entry || entry.state === 'busy' || entry.stopping) return
    hooks.retire(entry)
    hooks.spareFailed(`${entry.state === 'idle' ? 'while it waited for a run' : 'while it started'}: ${slot.overflowed}`)
  }
}
