import {
  type BudgetBreach, describeBreach, type LimitError, limitStop, newQuestionId, type PendingQuestion, withScopeSignal,
} from '@cordis-subagents/shared'
import type { ToolExecContext, ToolResult, ToolSuspension } from '@cordis-subagents/tools'
import type { Budget, TurnLimits } from './budget.js'
import type { InboxMessage } from './inbox.js'
import type { AgentError } from './errors.js'
import { abortDiagnostic, cancelled, interruptDiagnostic, isInterrupt, limitDiagnostic, type TurnInterrupt } from './stops.js'
import { checkSuspended } from './suspension.js'
import type { Leg, LegAbort, TurnOwner } from './turn-owner.js'
import type { ModelToolCall, RunOptions, RunResult, StopReason } from './types.js'

// A turn's legs off the plain road: resuming a parked turn, closing it, an interrupt (turn.ts runs the loop).

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
async function answerSuspended(
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
  const exec: ToolExecContext = withScopeSignal({ abortScope: leg.abort, agent, toolCallId: call.id })
  const { emit } = leg
  if (emit) exec.onUpdate = (update) => emit({ type: 'tool-update', step, toolCallId: call.id, name: call.name, update })
  leg.abort.raiseListenerLimit()
  leg.watch?.toolStart(step, call)
  let aborted = false
  const pending = (answer === undefined
    ? agent.tools.withdrawn(call, suspended.suspension, exec)
    : agent.tools.resume(call, answer, suspended.suspension, exec))
  const result = checkSuspended(call, await leg.abort.race(pending).catch(() => {
    aborted = true
    return cancelled()
  }))
  leg.watch?.toolEnd(step, call, result)
  emit?.({ type: 'tool-result', step, toolCallId: call.id, name: call.name, result })
  return aborted ? undefined : result
}

/** The members of a turn (turn.ts) its parked legs use: named here, below the turn (no import circle). */
export interface ParkableTurn {
  parked?: ParkedStep
  parkedAt: number
  refusedFor?: BudgetBreach
  readonly budget: Budget
  readonly limits: TurnLimits
  readonly owner: TurnOwner
  leg: Leg
  stepMessages: InboxMessage[]
  stepMessagesAt: number
  stepPushed: number
  open(abort: LegAbort, options: RunOptions, prompt: string, resumedQuestion?: string): void
  answer(call: ModelToolCall, result: ToolResult): void
  loop(): Promise<RunResult>
  finish(stopReason: StopReason, diagnostic?: string, breach?: BudgetBreach, code?: AgentError['code']): RunResult
  end(stopReason: StopReason, diagnostic?: string, breach?: BudgetBreach, question?: PendingQuestion): RunResult
  stopForBudget(breach: BudgetBreach): RunResult
}

/** Answers the last step's open calls with `reason`, then its dropped-calls note, if any. */
export function answerOpenCalls(turn: ParkableTurn, reason: string, note: string | undefined): void {
  const { transcript } = turn.owner.agent
  transcript.balance(reason)
  if (note) transcript.push({ role: 'user', content: note })
}

export function parkOn(turn: ParkableTurn, parked: ParkedStep): RunResult {
  turn.parked = parked
  // An interrupt after the resume must not put back messages a completed model call already read.
  turn.stepMessages = []
  turn.parkedAt = performance.now()
  turn.leg.emit?.({ type: 'pending', step: parked.step, question: parked.question })
  return turn.end('pending', undefined, undefined, parked.question)
}

/** An operator's hook failed: the run ends `error` with `HOOK_FAILED`, open calls answered before the step's dropped-calls note. */
export function hookFailed(turn: ParkableTurn, failure: AgentError, note?: string): RunResult {
  answerOpenCalls(turn, 'Not run: an operator\'s hook failed and the run ended.', note)
  return turn.finish('error', failure.message, undefined, failure.code)
}

/** The turn's leg was aborted: it ends `interrupted`, at a limit, or `aborted`. */
export function stopForAbort(turn: ParkableTurn): RunResult {
  const { reason } = turn.leg.abort
  if (isInterrupt(reason)) return interruptTurn(turn, reason)
  const limit = limitStop(reason)
  if (!limit) return turn.finish('aborted', abortDiagnostic(reason))
  return turn.finish(limit, limitDiagnostic(reason as LimitError), (reason as LimitError).breach)
}

/**
 * Continues the parked turn with `answer`: to the suspended calls it answers, or past the budget
 * it waited on. Without an answer, question `questionId` was withdrawn: its calls' tools give their results.
 */
export async function resumeTurn(
  turn: ParkableTurn, answer: string | undefined, abort: LegAbort, options: RunOptions, questionId = turn.parked!.question.id,
): Promise<RunResult> {
  const parked = turn.parked!
  turn.parked = undefined
  // Parked time does not count toward this run's wall-time budget (monotonic: a step of the OS clock is not parked time).
  turn.budget.pauseClock(performance.now() - turn.parkedAt)
  turn.open(abort, options, answer ?? '', questionId)
  turn.leg.emit?.(answer === undefined ? { type: 'resumed', step: parked.step, questionId, withdrawn: true } : { type: 'resumed', step: parked.step, questionId })
  if (abort.aborted) return abandon(turn, parked)
  if (parked.budget) {
    if (parked.budget.budget === 'toolCalls') {
      const still = turn.limits.reached(() => turn.budget.check('toolCalls'))
      const suspendFor = turn.limits.takeSuspension()
      if (suspendFor) return parkOn(turn, { step: parked.step, question: budgetQuestion(suspendFor), suspended: [], budget: suspendFor })
      if (still) return turn.stopForBudget(still)
      turn.refusedFor = undefined
    }
    return turn.loop()
  }
  const outcome = await answerSuspended(turn, turn.owner, turn.leg, parked, answer, questionId)
  if (outcome === 'aborted') return abandon(turn, parked)
  if (outcome) return parkOn(turn, outcome)
  return turn.loop()
}

/** Ends a parked turn for good (its agent is disposed): the open calls get an error result, the transcript is balanced. */
export function closeTurn(turn: ParkableTurn, reason: string): void {
  const parked = turn.parked
  if (!parked) return
  turn.parked = undefined
  answerOpenCalls(turn, reason, parked.note)
  turn.owner.agent.transcript.endTurn()
}

/** A resume aborted before the parked step was fully answered: its open calls get the cancel result, then the turn ends. */
function abandon(turn: ParkableTurn, parked: ParkedStep): RunResult {
  answerOpenCalls(turn, 'Cancelled: the run was aborted before this tool call was answered.', parked.note)
  return stopForAbort(turn)
}

/**
 * `agent.interrupt()`: inbox messages this step read that the model has not answered yet go back to
 * the inbox (and out of the transcript), then the turn ends.
 */
function interruptTurn(turn: ParkableTurn, reason: TurnInterrupt): RunResult {
  const { agent } = turn.owner
  const messages = turn.stepMessages
  if (messages.length) {
    turn.stepMessages = []
    agent.transcript.removeInFlight(turn.stepMessagesAt, turn.stepPushed)
    // Their usage and work were rolled into this turn already: they go back as plain messages, with their senders.
    agent.inbox.putBack(messages.map(({ content, from }) => (from === undefined ? { content } : { content, from })))
  }
  return turn.finish('interrupted', interruptDiagnostic(reason))
}
