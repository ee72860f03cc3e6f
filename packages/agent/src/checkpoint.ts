import type { BudgetBreach, PendingQuestion, Usage, WorkCounts } from '@cordis-subagents/shared'
import { totalTokens } from '@cordis-subagents/shared'
import type { ToolSuspension } from '@cordis-subagents/tools'
import type { TurnAgent, TurnOwner } from './turn-owner.js'
import { Turn } from './turn.js'
import type { ParkedStep } from './parked-turn.js'
import type { OutputContract, OutputOptions } from './output.js'
import type { Message, ModelToolCall } from './types.js'

/**
 * An agent as plain JSON (`agent.checkpoint()`), to rebuild it later, in this process or after a
 * restart: `ctx.agents.create({ restore: checkpoint })`. Versioned: `v` is 1.
 */
export interface AgentCheckpoint {
  v: 1
  id: string
  label?: string
  depth: number
  cwd: string
  persona?: string
  model?: string
  maxSteps: number
  maxTokens?: number
  maxToolCallsPerStep: number
  /** Its output schema (typed results), when it has one: a restored or continued agent keeps it (checked again). */
  output?: OutputOptions
  /** Every completed turn; when parked, then the parked turn's messages (from `parked.turnStart`). */
  messages: Message[]
  /** The agent's tallies over every run (the parked turn's so far included). */
  usage: { own: Usage; delegated: Usage }
  work: { own: WorkCounts; delegated: WorkCounts }
  /** Set when the agent is parked on a question: the parked turn. */
  parked?: ParkedTurnCheckpoint
}

/** A parked turn: where it starts, its tallies so far, and the calls that wait for an answer. */
export interface ParkedTurnCheckpoint {
  /** Index in `messages` of the parked turn's first message. */
  turnStart: number
  /** The step the turn parked at. */
  step: number
  /** The question it waits on (the first suspended call's, or the budget's). */
  question: PendingQuestion
  /** The calls of the last assistant message still unanswered, in call order, with their tools' suspensions. */
  suspended: { call: ModelToolCall; suspension: ToolSuspension }[]
  /** The note for calls dropped past `maxToolCallsPerStep`, appended once every call is answered. */
  note?: string
  /** Set when the turn parked at a budget limit. */
  budget?: BudgetBreach
  /** Set when tool calls were refused for the tool-call budget (the next step is offered no tools). */
  refusedFor?: BudgetBreach
  /** The turn's output so far and its tallies (the resumed `RunResult` goes on from them). */
  text: string
  steps: number
  toolCalls: number
  usage: { own: Usage; delegated: Usage }
  work: { own: WorkCounts; delegated: WorkCounts }
}

/** The members of an agent its checkpoint holds (an `Agent` has them all). */
interface CheckpointedAgent extends TurnAgent {
  readonly label?: string
  readonly cwd: string
  readonly output?: OutputContract
}

/** The members of an agent its checkpoint is made of (a parked turn aside). */
export type CheckpointParts = Pick<CheckpointedAgent, 'id' | 'label' | 'depth' | 'cwd' | 'persona' | 'model' | 'maxSteps' | 'maxTokens'
  | 'maxToolCallsPerStep' | 'output' | 'transcript' | 'usage' | 'work'>

/** `agent.checkpoint()`: one JSON copy of what the agent is, so nothing in it is shared with the live agent. */
export function takeCheckpoint(agent: CheckpointParts, turn: Turn | undefined): AgentCheckpoint {
  const parked = turn?.parked
  const completed = agent.transcript.completed()
  const checkpoint: AgentCheckpoint = {
    v: 1,
    id: agent.id,
    label: agent.label,
    depth: agent.depth,
    cwd: agent.cwd,
    persona: agent.persona,
    model: agent.model,
    maxSteps: agent.maxSteps,
    maxTokens: agent.maxTokens,
    maxToolCallsPerStep: agent.maxToolCallsPerStep,
    output: agent.output && { schema: agent.output.schema, maxCorrections: agent.output.maxCorrections },
    messages: (parked ? agent.transcript.messages : completed) as Message[],
    usage: { own: agent.usage.own, delegated: agent.usage.delegated },
    work: { own: agent.work.own, delegated: agent.work.delegated },
  }
  if (turn && parked) {
    checkpoint.parked = {
      turnStart: completed.length,
      step: parked.step,
      question: parked.question,
      suspended: parked.suspended,
      note: parked.note,
      budget: parked.budget,
      refusedFor: turn.refusedFor,
      text: turn.text,
      steps: turn.steps,
      toolCalls: turn.toolCalls,
      usage: { own: turn.own, delegated: turn.delegated },
      work: { own: turn.ownWork, delegated: turn.delegatedWork },
    }
  }
  // Drops undefined keys and every reference to live objects (messages, tool inputs, tallies).
  return JSON.parse(JSON.stringify(checkpoint)) as AgentCheckpoint
}

/**
 * Puts a checkpoint's tallies into a freshly built agent (its messages were its seed) and rebuilds
 * its parked turn, if it had one. A root agent's new budget is charged with what the parked turn spent.
 */
export function restoreTurn(agent: TurnAgent, owner: TurnOwner, checkpoint: AgentCheckpoint): Turn | undefined {
  agent.usage.own = { ...checkpoint.usage.own }
  agent.usage.delegated = { ...checkpoint.usage.delegated }
  agent.work.own = { ...checkpoint.work.own }
  agent.work.delegated = { ...checkpoint.work.delegated }
  const saved = checkpoint.parked
  if (!saved) return undefined
  agent.transcript.reopenTurn(saved.turnStart)
  const turn = new Turn(owner, agent.budget)
  turn.text = saved.text
  turn.steps = saved.steps
  turn.toolCalls = saved.toolCalls
  turn.own = { ...saved.usage.own }
  turn.delegated = { ...saved.usage.delegated }
  turn.ownWork = { ...saved.work.own }
  turn.delegatedWork = { ...saved.work.delegated }
  turn.refusedFor = saved.refusedFor
  // The agent's work tally in the checkpoint already counts them.
  turn.reported = { steps: saved.steps, toolCalls: saved.toolCalls }
  const parked: ParkedStep = { step: saved.step, question: saved.question, suspended: saved.suspended }
  if (saved.note !== undefined) parked.note = saved.note
  if (saved.budget) parked.budget = saved.budget
  turn.parked = parked
  turn.parkedAt = performance.now()
  if (owner.ownsRootBudget) {
    agent.budget.charge('steps', saved.steps)
    agent.budget.charge('toolCalls', saved.toolCalls)
    agent.budget.charge('tokens', totalTokens(saved.usage.own) + totalTokens(saved.usage.delegated))
  }
  return turn
}
