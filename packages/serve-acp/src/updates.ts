// The session/update notifications a served turn sends, and the spend it reports.
import type { Agent, AgentEvent, BudgetSpend, Message, RunResult } from '@cordis-subagents/agent'
import { addCounts, headChars, type TraceContextHeaders } from '@cordis-subagents/shared'

/** Longest tool-call title sent to the client (UTF-16 units, cut on a character boundary). */
const TITLE_CHARS = 200

/** Spend of a session's finished turns (what the next turn's reports start from). */
export interface Spent {
  steps: number
  tokens: number
  toolCalls: number
  delegations: number
}

export function reportOf(base: Spent, spent: BudgetSpend, agent: Agent) {
  const { inputTokens, outputTokens, cachedInputTokens } = agent.usage.total
  const usage = cachedInputTokens === undefined ? { inputTokens, outputTokens } : { inputTokens, outputTokens, cachedInputTokens }
  return { ...totals(base, spent), usage }
}

export function totals(base: Spent, spent: BudgetSpend) {
  return {
    steps: addCounts(base.steps, spent.steps),
    tokens: addCounts(base.tokens, spent.tokens),
    toolCalls: addCounts(base.toolCalls, spent.toolCalls),
    delegations: addCounts(base.delegations, spent.children),
  }
}

/** The session/update for an agent event, or undefined for events the client does not see. */
export function eventUpdate(event: AgentEvent): Record<string, unknown> | undefined {
  switch (event.type) {
    case 'text':
      return { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: event.text } }
    case 'tool-call':
      return {
        sessionUpdate: 'tool_call', toolCallId: event.call.id, status: 'in_progress', kind: 'other',
        title: headChars(`${event.call.name} ${JSON.stringify(event.call.input) ?? ''}`, TITLE_CHARS),
      }
    case 'tool-result':
      return { sessionUpdate: 'tool_call_update', toolCallId: event.toolCallId, status: event.result.isError ? 'failed' : 'completed' }
    default:
      return undefined
  }
}

/** ACP's `usage` of a prompt's answer: cumulative over the session ("across all turns"), the session agent's total. */
export function acpUsage(agent: Agent) {
  const { inputTokens, outputTokens, cachedInputTokens } = agent.usage.total
  const cached = cachedInputTokens === undefined ? {} : { cachedReadTokens: cachedInputTokens }
  return { totalTokens: addCounts(inputTokens, outputTokens), inputTokens, outputTokens, ...cached }
}

/** A stored message as the session/update that replays it (tool messages are not replayed). */
export function replayed(message: Message): Record<string, unknown> | undefined {
  if (message.role === 'user') return { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: message.content } }
  if (message.role === 'assistant' && message.content) return { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: message.content } }
  return undefined
}

/** Our stop reasons that are ACP stop reasons; the others (error, max-steps, timeout, budget) are answered with a JSON-RPC error. */
const STOPS: Partial<Record<RunResult['stopReason'], 'end_turn' | 'cancelled' | 'max_tokens' | 'refusal'>> = {
  completed: 'end_turn',
  aborted: 'cancelled',
  'max-tokens': 'max_tokens',
  refusal: 'refusal',
}

/** The ACP stop reason of ours, if it is one. */
export function acpStop(stopReason: RunResult['stopReason']): 'end_turn' | 'cancelled' | 'max_tokens' | 'refusal' | undefined {
  return Object.hasOwn(STOPS, stopReason) ? STOPS[stopReason] : undefined
}

/** What the server needs of ctx.telemetry. */
export interface Telemetry {
  continueTrace(agent: Agent, context: TraceContextHeaders | undefined): boolean
}
