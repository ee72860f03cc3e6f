import type { PendingQuestion } from '@cordis-subagents/shared'
import { AgentError } from './errors.js'
import { type ParkedStep, questionsOf } from './parked-turn.js'

/**
 * Why `agent.resume` takes no answer now (the answer's own text aside), or undefined when it does:
 * `BUSY`, `ALREADY_ANSWERED` (its question was answered, by anyone), `NOT_PARKED`, or a
 * `questionId` the parked turn does not wait on.
 */
export function answerRefusal(
  agentId: string, busy: boolean, parked: ParkedStep | undefined, answered: PendingQuestion | undefined, questionId: unknown,
): AgentError | undefined {
  const already = !parked && answered
    ? `its question ${answered.id} (${JSON.stringify(answered.text.slice(0, 200))}) was answered already and the turn went on with that answer`
    : undefined
  if (busy) {
    return new AgentError('BUSY', already
      ? `Agent ${agentId} is already running a turn: ${already}; read its result with agent.nextResult().`
      : `Agent ${agentId} is already running a turn; wait for it or abort it first.`)
  }
  if (already) return new AgentError('ALREADY_ANSWERED', `Agent ${agentId} is not waiting for an answer: ${already}. Nothing was passed on.`)
  if (!parked) return new AgentError('NOT_PARKED', `Agent ${agentId} is not waiting for an answer (agent.parked is undefined); start a turn with run().`)
  if (questionId === undefined) return undefined
  if (typeof questionId !== 'string') return new AgentError('INVALID_OPTIONS', 'options.questionId must be a question id (a string), one of agent.waitingOn.')
  const waiting = questionsOf(parked).map((question) => question.id)
  if (waiting.includes(questionId)) return undefined
  return new AgentError(answered?.id === questionId ? 'ALREADY_ANSWERED' : 'NOT_PARKED',
    `Agent ${agentId} does not wait on question ${questionId.slice(0, 100)}${answered?.id === questionId ? ' (it was answered already)' : ''}; `
    + `it waits on ${waiting.join(', ')} (agent.waitingOn).`)
}
