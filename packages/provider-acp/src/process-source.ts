import type * as Acp from '@agentclientprotocol/sdk'
import { describeError } from '@cordis-subagents/shared'
import { AgentSlot, type ProcessKind } from './agent-slot.js'
import { AcpError } from './errors.js'
import type { Sdk } from './sdk.js'
import type { RunSettings } from './settings.js'

export interface Acquired {
  slot: AgentSlot
  kind: ProcessKind
  /** Why the run got this kind of process, when that is news (`spares paused`): shown in the run's origin. */
  note?: string
}

export interface ReleaseOptions {
  /** The run ended cleanly (a stop answer, no cancel, no overflow): its process may serve again. */
  reusable: boolean
  /** Skip the polite exitGrace (the process misbehaved or is gone). */
  hurry: boolean
  /** The run's session, which nothing continues: a process kept for another run closes it (`session/close`) when the agent offers that. */
  endSession?: string
}

/** Where runs get their initialized agent process from, and where they hand it back. */
export interface ProcessSource {
  /** True for a pool (runs then report the kind of process they got). */
  readonly pooled: boolean
  /**
   * An initialized process for `settings`; `cold` forces a new one; `prefer` names a session a
   * process that still has it open should be picked for. Rejects with an `AcpError` after stopping what it started.
   */
  acquire(sdk: Sdk, settings: RunSettings, signal: AbortSignal, cold?: boolean, prefer?: string): Promise<Acquired>
  /** A run opened or continued `sessionId` on `slot` (a pool marks other copies of it out of date). */
  opened?(slot: AgentSlot, sessionId: string): void
  /** The run is done with `slot`. Resolves once the process is stopped, or kept. */
  release(slot: AgentSlot, options: ReleaseOptions): Promise<void>
}

/** Spawns and initializes a process; on any failure stops it (no grace) and rethrows. */
export async function spawnSlot(sdk: Sdk, settings: RunSettings, signal: AbortSignal): Promise<AgentSlot> {
  let slot: AgentSlot
  try {
    slot = new AgentSlot(sdk, settings)
  } catch (error) {
    throw new AcpError('ACP_SPAWN_FAILED', `Could not start the ACP agent "${settings.command}": ${describeError(error)}.`, { cause: error })
  }
  settings.logger.debug('%s: spawned %s (pid %s) in %s', settings.providerName, settings.command, slot.pid, settings.cwd)
  try {
    await slot.link.connect(signal)
  } catch (error) {
    await slot.terminate(0)
    throw error
  }
  return slot
}

/** One process per run, stopped when the run is done (the default). */
export const coldSource: ProcessSource = {
  pooled: false,
  async acquire(sdk, settings, signal) {
    return { slot: await spawnSlot(sdk, settings, signal), kind: 'cold' }
  },
  release(slot, { hurry }) {
    return slot.terminate(hurry ? 0 : slot.exitGrace)
  },
}

/**
 * Hands a run's process back to its source: kept for another session when the pool takes it and
 * the run ended cleanly (`reusable`), else close the connection → close stdin → SIGTERM after
 * exitGrace → SIGKILL after killGrace → wait. The turn is over (or was given up on): the agent gets
 * a short exitGrace to leave at EOF, then SIGTERM. Agents that ignore EOF once a session exists
 * (Codex' and Claude's adapters) cost exitGrace, not cancelGrace; a cancelled run is still gone
 * within cancelGrace + exitGrace + killGrace of the cancel.
 */
export async function handBack(
  source: ProcessSource, slot: AgentSlot, session: Acp.ActiveSession | undefined, options: ReleaseOptions,
): Promise<void> {
  try {
    session?.dispose()
  } catch {
    // best effort
  }
  if (slot.tenant && slot.link.stage === 'prompt') slot.link.stage = 'session/new'
  await source.release(slot, options)
}
