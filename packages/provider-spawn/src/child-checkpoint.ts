import type { Agent, AgentCheckpoint, AgentRuntime, Message } from '@cordis-subagents/agent'
import type { ProviderStartRequest } from '@cordis-subagents/subagents-service'
import type { ToolView } from '@cordis-subagents/tools'

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
