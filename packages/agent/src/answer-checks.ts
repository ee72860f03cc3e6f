import { MAX_ANSWER_LENGTH, type PendingQuestion } from '@cordis-subagents/shared'
import { AgentError } from './errors.js'
import { type ParkedStep, questionsOf } from './parked-turn.js'

/**
 * Why `agent.resume` takes no answer now (the answer's own text aside), or undefined when it does:
 * `BUSY`, `ALREADY_ANSWERED` (its question was answered, by anyone), `NOT_PARKED` (also for a
 * question that was withdrawn), or a `questionId` the parked turn does not wait on.
 */
export function answerRefusal(
  agentId: string, busy: boolean, parked: ParkedStep | undefined, answered: PendingQuestion | undefined, questionId: unknown,
  withdrawn = false,
): AgentError | undefined {
  const what = answered && `its question ${answered.id} (${JSON.stringify(answered.text.slice(0, 200))})`
  const already = !parked && answered
    ? withdrawn
      ? `${what} was withdrawn (whoever asked it no longer waits for an answer) and the turn went on without one`
      : `${what} was answered already and the turn went on with that answer`
    : undefined
  if (busy) {
    return new AgentError('BUSY', already
      ? `Agent ${agentId} is already running a turn: ${already}; read its result with agent.nextResult().`
      : `Agent ${agentId} is already running a turn; wait for it or abort it first.`)
  }
  if (already) return new AgentError(withdrawn ? 'NOT_PARKED' : 'ALREADY_ANSWERED', `Agent ${agentId} is not waiting for an answer: ${already}. Nothing was passed on.`)
  if (!parked) return new AgentError('NOT_PARKED', `Agent ${agentId} is not waiting for an answer (agent.parked is undefined); start a turn with run().`)
  if (questionId === undefined) return undefined
  if (typeof questionId !== 'string') return new AgentError('INVALID_OPTIONS', 'options.questionId must be a question id (a string), one of agent.waitingOn.')
  const waiting = questionsOf(parked).map((question) => question.id)
  if (waiting.includes(questionId)) return undefined
  const again = answered?.id === questionId
  return new AgentError(again && !withdrawn ? 'ALREADY_ANSWERED' : 'NOT_PARKED',
    `Agent ${agentId} does not wait on question ${questionId.slice(0, 100)}${again ? ` (it was ${withdrawn ? 'withdrawn' : 'answered already'})` : ''}; `
    + `it waits on ${waiting.join(', ')} (agent.waitingOn).`)
}

/** Why `agent.withdraw(questionId)` cannot withdraw it (beyond `answerRefusal`): only a suspended tool call's question can be. */
export function withdrawalRefusal(agentId: string, parked: ParkedStep, questionId: unknown): AgentError | undefined {
  if (typeof questionId !== 'string') return new AgentError('INVALID_OPTIONS', 'withdraw(questionId) takes a question id (a string), one of agent.waitingOn.')
  if (parked.suspended.some((call) => call.suspension.question.id === questionId)) return undefined
  return new AgentError('NOT_PARKED', `Agent ${agentId} has no tool call waiting on question ${questionId.slice(0, 100)}; `
    + 'only a suspended call\'s question can be withdrawn (a budget question is answered with resume).')
}

/** Throws `INVALID_PROMPT` for an answer that is not a non-empty string of at most `MAX_ANSWER_LENGTH` characters. */
export function checkAnswerText(answer: unknown): void {
  if (typeof answer !== 'string' || !answer.trim()) throw new AgentError('INVALID_PROMPT', 'The answer must be a non-empty string.')
  if (answer.length > MAX_ANSWER_LENGTH) {
    throw new AgentError('INVALID_PROMPT', `An answer is at most ${MAX_ANSWER_LENGTH} characters (got ${answer.length}); shorten it.`)
  }
}
