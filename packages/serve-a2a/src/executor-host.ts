import type { ExecutionEventBusManager, ServerCallContext } from '@a2a-js/sdk/server'
import type { Agent, AgentRuntime } from '@cordis-subagents/agent'
import type { TraceContextHeaders } from '@cordis-subagents/shared'
import type { ToolRegistry } from '@cordis-subagents/tools'
import type { Config } from './config.js'
import type { TaskSlots } from './guards.js'
import type { TurnSaver } from './saved-turns.js'

/** What the executor needs from the host; `telemetry` is read per task (it may come and go). */
export interface ExecutorHost {
  agents: AgentRuntime
  tools: ToolRegistry
  telemetry(): { continueTrace(agent: Agent, context: TraceContextHeaders | undefined): boolean } | undefined
  slots: TaskSlots
  config: Config
  log: { debug(format: string, ...args: unknown[]): void }
  /**
   * The request handler's bus manager (default: one the executor makes, `executor.buses`, which
   * the server hands to the request handler): the bus of a parked task that ends is released through it.
   */
  buses?: ExecutionEventBusManager
  /** Cancels a task through the request handler (the store records it); used when a parked task expires. */
  cancelTask?(taskId: string, context: ServerCallContext): Promise<unknown>
  /** Shared: where each turn's start and each park are saved, so another host can continue the task. */
  turns?: TurnSaver
  warn?(format: string, ...args: unknown[]): void
}
