import { type BudgetBreach, describeBreach, newQuestionId, type PendingQuestion } from '@cordis-subagents/shared'
import type { ToolExecContext, ToolResult, ToolSuspension } from '@cordis-subagents/tools'
import { checkSuspended, type Leg } from './step.js'
import { cancelled } from './stops.js'
import type { TurnOwner } from './turn-owner.js'
import type { ModelToolCall } from './types.js'

/** A call of the parked step that waits for an answer, with what its tool's `resume` needs. */
export interface SuspendedCall {
  call: ModelToolCall
  suspension: ToolSuspension
}

/** What a parked turn waits on. */
export interface ParkedStep {
  /** The step whose calls suspended (for a budget park: the last step made). */
  step: number
  /** The question asked now: the first suspended call's, or the budget's. */
  question: PendingQuestion
  /** The step's calls still waiting, in call order; the first is answered by the next `resume`. Empty for a budget park. */
  suspended: SuspendedCall[]
  /** The note answering calls dropped past `maxToolCallsPerStep`: appended once every call is answered. */
  note?: string
  /** Set when the turn parked at a budget (`onBudget` → `suspend()`). */
  budget?: BudgetBreach
}

/** The questions a parked step waits on, in call order, each once (a budget park: its one question). */
export function questionsOf(parked: ParkedStep): PendingQuestion[] {
  if (!parked.suspended.length) return [parked.question]
  const seen = new Map<string, PendingQuestion>()
  for (const { suspension: { question } } of parked.suspended) if (!seen.has(question.id)) seen.set(question.id, question)
  return [...seen.values()]
}

/** The question of a turn parked at a budget limit. */
export function budgetQuestion(breach: BudgetBreach): PendingQuestion {
  return {
    id: newQuestionId(),
    kind: 'budget',
    text: `The run reached ${describeBreach(breach)} and was suspended. Extend the budget, then resume it to go on (resuming without an extension stops or suspends it again).`,
    path: [],
  }
}

/**
 * Gives `answer` to every call of a parked step suspended on `questionId` (default: the question
 * asked now, the first call's): one question, one answer (two reattached calls of one task share
 * their child's question). Each gets its tool's `resume` with a fresh exec (same call id, this
 * leg's signal), in call order; with no answer (the question was withdrawn) its tool's `withdrawn`.
 * Returns the step parked again (a call suspended again, or calls on other questions still wait),
 * `'aborted'` when the leg was aborted first, or undefined once every call of the step is answered
 * (the loop goes on with the next model call).
 */
export async function answerSuspended(
  turn: { answer(call: ModelToolCall, result: ToolResult): void },
  owner: TurnOwner, leg: Leg, parked: ParkedStep, answer: string | undefined, questionId = parked.question.id,
): Promise<ParkedStep | 'aborted' | undefined> {
  const waiting: SuspendedCall[] = []
  for (const suspended of parked.suspended) {
    if (suspended.suspension.question.id !== questionId) {
      waiting.push(suspended)
      continue
    }
    const result = await resumeCall(owner, leg, parked.step, suspended, answer)
    if (!result) return 'aborted'
    if (result.suspend) waiting.push({ call: suspended.call, suspension: result.suspend })
    else turn.answer(suspended.call, result)
  }
  if (waiting.length) return { ...parked, question: waiting[0].suspension.question, suspended: waiting }
  if (parked.note) owner.agent.transcript.push({ role: 'user', content: parked.note })
  return undefined
}

/** One suspended call's tool `resume` (`withdrawn` without an answer); undefined when the leg was aborted first. */
async function resumeCall(
  owner: TurnOwner, leg: Leg, step: number, suspended: SuspendedCall, answer: string | undefined,
): Promise<ToolResult | undefined> {
  const { agent } = owner
  const { call } = suspended
  const exec: ToolExecContext = { signal: leg.abort.signal, agent, toolCallId: call.id }
  const { emit } = leg
  if (emit) exec.onUpdate = (update) => emit({ type: 'tool-update', step, toolCallId: call.id, name: call.name, update })
  leg.abort.raiseListenerLimit()
  leg.watch?.toolStart(step, call)
  let aborted = false
  const pending = owner.track(answer === undefined
    ? agent.tools.withdrawn(call, suspended.suspension, exec)
    : agent.tools.resume(call, answer, suspended.suspension, exec))
  const result = checkSuspended(call, await Promise.race([pending, leg.abort.aborted]).catch(() => {
    aborted = true
    return cancelled()
  }))
  leg.watch?.toolEnd(step, call, result)
  emit?.({ type: 'tool-result', step, toolCallId: call.id, name: call.name, result })
  return aborted ? undefined : result
}
