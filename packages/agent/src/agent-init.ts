// What an agent is made from: the runtime's seam (models, gates, budget handlers, observers,
// hooks) and the options `ctx.agents.create` resolved for it.
import type { ToolView } from '@cordis-subagents/tools'
import type { BudgetBreach } from '@cordis-subagents/shared'
import type { Agent } from './agent.js'
import type { Budget, BudgetLimits } from './budget.js'
import type { ContinueHooks } from './continue-hooks.js'
import type { ModelGate } from './model-gate.js'
import type { Observers } from './observers.js'
import type { ChatModel, Message } from './types.js'
import type { AgentCheckpoint } from './checkpoint.js'

/** What an agent needs from the runtime that made it. */
export interface AgentHost {
  resolveModel(ref: string | undefined): { model: ChatModel; name: string; modelId?: string } | { error: string }
  /** The gate around model calls (`maxModelCallsInFlight`, `models.<name>.maxInFlight`); undefined when no cap is set. */
  modelGate?: ModelGate
  /**
   * Tells the operator's budget handlers about a breach; they may extend the budget before it is
   * re-checked. True when one of them asked to suspend the run (`BudgetEvent.suspend()`).
   */
  budgetReached(agent: Agent, breach: BudgetBreach): boolean
  /** The runtime's observers (`ctx.agents.observe`): told about every run, model call and tool call. */
  observers: Observers
  /** The operators' `shouldContinue` hooks, asked before every model call (none: one size check). */
  continueHooks: ContinueHooks
}

export interface AgentInit {
  id: string
  parent?: Agent
  depth: number
  cwd: string
  persona?: string
  model?: string
  tools: ToolView
  seed?: readonly Message[]
  maxSteps: number
  maxTokens?: number
  label?: string
  /** Most tool calls of one step that run; the rest are answered with an error. */
  maxToolCallsPerStep: number
  /** This agent's own limits (a root's are renewed for every run). */
  budgetLimits?: BudgetLimits
  /** A budget already carved for this agent (by the service that started it as a child). */
  budget?: Budget
  /** A checkpoint (validated) this agent is rebuilt from: its tallies and its parked turn; `seed` holds its messages. */
  restore?: AgentCheckpoint
}

/** What a turn needs of its agent beyond the agent's public members. */
export interface TurnOwner {
  readonly agent: Agent
  readonly host: AgentHost
  /** Whether the agent spends from a root budget of its own (renewed per run; `onSpend` watches it). */
  readonly ownsRootBudget: boolean
  /** Remembers work that may outlive an aborted turn, so `dispose` can wait for it. */
  track<T>(work: T | Promise<T>): Promise<T>
}
