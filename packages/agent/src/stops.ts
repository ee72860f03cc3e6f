import { type BudgetBreach, describeBreach, type LimitError } from '@cordis-subagents/shared'
import type { ToolResult } from '@cordis-subagents/tools'
import type { GenerateResponse, StopReason } from './types.js'

// How a turn's end is explained: the diagnostics of aborts and limits; the texts the model reads
// for calls that did not run (none of these is on a plain turn's road).

export function abortDiagnostic(reason: unknown): string {
  if (reason instanceof Error && reason.name !== 'AbortError') return `Aborted: ${reason.message}`
  if (typeof reason === 'string' && reason) return `Aborted: ${reason}`
  return 'Aborted.'
}

/** The abort reason of `agent.interrupt(reason)`: the turn ends `interrupted`, not `aborted`. */
export class TurnInterrupt extends Error {
  override name = 'TurnInterrupt'
  constructor(readonly reason?: unknown) {
    super(typeof reason === 'string' && reason ? reason : reason instanceof Error ? reason.message : 'interrupted')
  }
}

export function isInterrupt(reason: unknown): reason is TurnInterrupt {
  return reason instanceof TurnInterrupt
}

export function interruptDiagnostic(interrupt: TurnInterrupt): string {
  const { reason } = interrupt
  const why = typeof reason === 'string' && reason ? `: ${reason}` : reason instanceof Error ? `: ${reason.message}` : ''
  return `Interrupted${why}. The agent is idle and keeps its transcript; inbox messages the model had not answered yet are back in its inbox.`
}

export function budgetDiagnostic(breach: BudgetBreach): string {
  return `Stopped by ${describeBreach(breach)}; the answer so far is partial. Raise the budget, or give a narrower task.`
}

export function policyDiagnostic(reason: string, step: number): string {
  return `Stopped by the operator's policy (shouldContinue) before model call ${step}: ${reason}. The answer so far is partial.`
}

export function limitDiagnostic(reason: LimitError): string {
  if (reason.code === 'TIMEOUT') return reason.message || 'Stopped by a timeout.'
  return reason.breach ? budgetDiagnostic(reason.breach) : reason.message || 'Stopped by a budget.'
}

/** Stop reasons of a model's finish reasons that end a run (tool-calls and stop do not). */
export const FINISH_STOPS: Partial<Record<GenerateResponse['finishReason'], StopReason>> = {
  length: 'max-tokens',
  refusal: 'refusal',
  error: 'error',
  other: 'error',
}

/** How much of an unrecognised finish reason a diagnostic quotes. */
const MAX_QUOTED_REASON = 64

export function finishDiagnostic(reason: GenerateResponse['finishReason']): string {
  switch (reason) {
    case 'length': return 'The model hit its output token limit before finishing.'
    case 'refusal': return 'The model refused to answer.'
    case 'error': return 'The model reported an error.'
    // Quoted from the model's adapter, which may pass a server's value through: cut, and one line.
    default: return `The model stopped for an unrecognised reason (${JSON.stringify(String(reason).slice(0, MAX_QUOTED_REASON))}).`
  }
}

export function cancelled(): ToolResult {
  return { isError: true, content: 'Cancelled: the run was aborted before this tool call finished.' }
}

/**
 * The one message that answers every call past `maxToolCallsPerStep` (`cap`): those calls were dropped
 * from the step (not kept in the transcript, not run), so they cost O(1) however many there were.
 */
export function droppedCallsNote(kept: number, dropped: number, cap: number): string {
  return `Not run: your last step asked for ${kept + dropped} tool calls and at most ${cap} run per step `
    + `(maxToolCallsPerStep). The first ${kept} were kept (their results are above); the other ${dropped} were dropped `
    + `without running and are not in the conversation. Ask again for the ones you still need, at most ${cap} per step.`
}
