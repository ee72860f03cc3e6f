import type * as Acp from '@agentclientprotocol/sdk'
import type { AgentProcess, ExitInfo } from './process.js'

/** What a prompt turn waits for next: the session's next update (or its turn's end), or the process's exit. */
export type TurnEvent = Awaited<ReturnType<Acp.ActiveSession['nextUpdate']>> | { kind: 'exit'; exit: ExitInfo }

/**
 * The events of a session's prompt turns, with the process's death as one of them: a dead
 * process ends the turn at once. Not `Promise.race` with the (long-pending) exit promise: every
 * race would add a reaction to it that keeps that update alive until the process exits, i.e. the
 * whole stream.
 */
export function turnEvents(session: Acp.ActiveSession, proc: AgentProcess): () => Promise<TurnEvent> {
  let died: ExitInfo | undefined
  let wake: ((next: TurnEvent) => void) | undefined
  proc.settledExit.then((exit) => {
    died = exit
    wake?.({ kind: 'exit', exit })
  })
  return () => new Promise<TurnEvent>((resolve, reject) => {
    if (died) return resolve({ kind: 'exit', exit: died })
    const done = () => { wake = undefined }
    wake = (next) => { done(); resolve(next) }
    session.nextUpdate().then((next) => { done(); resolve(next) }, (error) => { done(); reject(error) })
  })
}
