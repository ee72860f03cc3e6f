import { TaskState } from '@a2a-js/sdk'
import type { RequestContext } from '@a2a-js/sdk/server'
import type { Agent } from '@cordis-subagents/agent'
import type { Crossing } from '@cordis-subagents/shared'
import type { ExecutorHost } from './executor-host.js'
import type { SavedTurn } from './saved-turns.js'
import { restoreTaskAgent } from './task-agent.js'
import type { TaskEvents } from './task-events.js'

/** A task's agent and the crossing it runs under. */
export interface Held {
  agent: Agent
  crossing: Crossing
}

/** Saves the task's turn (shared store only); a failure is logged: the task runs on, it just cannot move if this host dies. */
export async function saveTurn(host: ExecutorHost, request: RequestContext, held: Held, turn?: SavedTurn['turn']): Promise<void> {
  if (!host.turns) return
  const saved: SavedTurn = { v: 1, crossing: held.crossing, agent: held.agent.checkpoint(), ...turn ? { turn } : {} }
  await host.turns.save(request.taskId, request.context, saved).catch((error: Error) => {
    host.warn?.('task %s: its turn could not be saved (%s); if this host dies, the task fails (HOST_LOST)', request.taskId, error.message)
  })
}

/** A saved agent, rebuilt here; undefined (the task ended failed, `RESTORE_FAILED`) when its checkpoint does not restore. */
export function restoreHeld(host: ExecutorHost, saved: SavedTurn, events: TaskEvents): Held | undefined {
  try {
    return { agent: restoreTaskAgent(host, saved.crossing, saved.agent), crossing: saved.crossing }
  } catch (error) {
    events.end(TaskState.TASK_STATE_FAILED, `The task's saved agent could not be restored on this host: ${(error as Error).message}`,
      { stopReason: 'error', code: 'RESTORE_FAILED' })
    return undefined
  }
}

/**
 * Runs a task's set-up before its agent is driven (a trace continued, its turn saved): when it throws, the agent (not driven, so
 * disposed by nothing else) is disposed and the task ends failed. False then.
 */
export async function setUp(agent: Agent, events: TaskEvents, step: () => Promise<void>): Promise<boolean> {
  try {
    await step()
    return true
  } catch (error) {
    await agent.dispose()
    events.end(TaskState.TASK_STATE_FAILED, `The task could not be set up: ${(error as Error).message}`, { stopReason: 'error' })
    return false
  }
}
