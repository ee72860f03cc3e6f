import type { AgentSlot } from '../agent-slot.js'

/** How long a kept process may take to answer `session/close`. */
const CLOSE_SESSION_MS = 5_000

/**
 * A kept process frees the session its run ended with (`session/close`, when the agent offers it),
 * so its sessions do not pile up. Sent without waiting: the next run's requests follow it on the same
 * connection. An agent that refuses or does not answer in time leaves the process stale (not reused
 * after its current run).
 */
export function closeEnded(slot: AgentSlot, sessionId: string): void {
  if (!slot.link.canCloseSession) return
  slot.link.closeSession(sessionId, CLOSE_SESSION_MS).then(
    () => { slot.openSessions.delete(sessionId) },
    () => { slot.stale = true },
  )
}
