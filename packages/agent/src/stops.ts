import { type BudgetBreach, describeBreach, type LimitError } from '@cordis-subagents/shared'
import type { GenerateResponse, StopReason } from './types.js'

// How a turn's end is explained: the abort promise every call of a turn races, and the diagnostics of aborts and limits.

/**
 * Rejects with the signal's reason once it aborts. A turn races its model and tool calls against
 * this one promise, so it keeps a single abort listener however many steps and calls it makes.
 */
export function abortion(signal: AbortSignal): Promise<never> {
  const promise = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason)
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true })
  })
  promise.catch(() => {}) // Only ever observed through a race; never an unhandled rejection.
  return promise
}

export function abortDiagnostic(signal: AbortSignal): string {
  const reason = signal.reason
  if (reason instanceof Error && reason.name !== 'AbortError') return `Aborted: ${reason.message}`
  if (typeof reason === 'string' && reason) return `Aborted: ${reason}`
  return 'Aborted.'
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
