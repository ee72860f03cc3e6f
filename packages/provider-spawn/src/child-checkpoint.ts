import type { Agent, AgentCheckpoint, AgentRuntime, Budget, BudgetLimits, Message } from '@cordis-subagents/agent'
import type { ProviderStartRequest } from '@cordis-subagents/subagents-service'
import type { ToolView } from '@cordis-subagents/tools'

/**
 * What a restore after a restart must not lose of the ceiling the child was started under, which its new parent (a
 * fresh root of the host) does not carry: kept in the provider run's checkpoint as `ceiling` (restore.ts reads it).
 */
export interface ChildCeiling {
  /** The registered tools the child could see (its parent's view, narrowed by its tool filter) when it was taken. */
  tools: string[]
  /** What was left then of each limit of its tree budget that has one (`maxConcurrent` aside: the tree's own). */
  budget?: BudgetLimits
}

/** The provider run's checkpoint: the child agent's, and its ceiling (absent in checkpoints stored before it was kept). */
export type ChildCheckpoint = AgentCheckpoint & { ceiling?: ChildCeiling }

/** The budget limits a ceiling keeps. */
export const CEILING_LIMITS = ['maxSteps', 'maxTokens', 'maxToolCalls', 'maxWallMs', 'maxChildren', 'maxDepth'] as const

/** The ceiling of a live child: `request` the one it was started with, `child` its agent. */
export function ceilingOf(request: ProviderStartRequest, child: Agent): ChildCeiling {
  // Its parent's view narrowed as the child's was (`restrict` leaves out the parent's own tools, which the child never gets).
  const ceiling: ChildCeiling = { tools: request.parent.tools.restrict(request.toolFilter ?? {}).names() }
  const budget = budgetLeft(child.budget)
  if (budget) ceiling.budget = budget
  return ceiling
}

function budgetLeft(budget: Budget): BudgetLimits | undefined {
  const left = budget.remaining()
  let kept: BudgetLimits | undefined
  for (const key of CEILING_LIMITS) if (Number.isFinite(left[key])) (kept ??= {})[key] = Math.max(0, Math.floor(left[key]))
  return kept
}

/** A child rebuilt from its checkpoint (its settings and transcript), in a new agent below the request's parent. */
export function rebuiltChild(agents: AgentRuntime, checkpoint: AgentCheckpoint, request: ProviderStartRequest) {
  return (tools: ToolView): Agent =>
    agents.create({ restore: checkpoint, parent: request.parent, tools, ...request.budget ? { budget: request.budget } : {} })
}

/**
 * The child's checkpoint with its turn in flight kept up to its last completed step: the turn's
 * prompt (on the first turn, the child's task) and every step whose tool calls all have results.
 * The agent's own checkpoint taken mid-turn holds only the completed turns, so a child restored
 * after a crash would have lost the task it was working on. A parked child's checkpoint already
 * holds its parked turn.
 */
export function childCheckpoint(child: Agent): AgentCheckpoint {
  const checkpoint = child.checkpoint()
  if (!child.running || checkpoint.parked) return checkpoint
  const { transcript } = child
  const start = transcript.completed().length
  if (transcript.length <= start) return checkpoint
  const inFlight = transcript.messages.slice(start)
  const kept = inFlight.slice(0, settledLength(inFlight))
  // A JSON copy, as the agent's checkpoint is: nothing in it is shared with the live child.
  if (kept.length) checkpoint.messages.push(...JSON.parse(JSON.stringify(kept)) as Message[])
  return checkpoint
}

/**
 * How many of a turn's messages end at a completed step: all of them, unless the last assistant
 * message still waits for a tool result (its step is in flight: it and its partial results are left out).
 */
function settledLength(messages: readonly Message[]): number {
  let index = messages.length - 1
  while (index >= 0 && messages[index].role === 'tool') index--
  const last = messages[index]
  if (!last || last.role !== 'assistant' || !last.toolCalls?.length) return messages.length
  const answered = new Set<string>()
  for (let i = index + 1; i < messages.length; i++) answered.add((messages[i] as { toolCallId: string }).toolCallId)
  return last.toolCalls.every((call) => answered.has(call.id)) ? messages.length : index
}
