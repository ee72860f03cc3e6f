import type { Budget } from '@cordis-subagents/agent'
import {
  type BudgetBreach, checkedQuestion, checkedUsage, checkedWork, describeBreach, describeError, isObject, MAX_TIMER_MS,
  type PendingQuestion, totalTokens,
} from '@cordis-subagents/shared'
import { capDiagnostic } from '../diagnostic.js'
import { SubagentError } from '../errors.js'
import type { SubagentResult, SubagentStatus, SubagentStopReason, SubagentUpdate } from '../types.js'

// The run's rarer words with its provider, off the plain road: a run a limit stopped, the reported spend of a
// child elsewhere (ACP, A2A) that took its tree past a limit, and the texts of a reason or a malformed value.


/** A run a limit cancelled is reported as that limit, never as a cancel or a failure. */
export function asLimitStop(raw: SubagentResult, stop: 'timeout' | 'budget', reason: unknown): SubagentResult {
  if (raw.stopReason !== 'aborted' && raw.stopReason !== 'error') return raw
  const breach = isObject(reason) && isObject(reason.breach) ? reason.breach as unknown as BudgetBreach : undefined
  const headline = stop === 'timeout'
    ? `Stopped by a timeout: ${describeError(reason)}.`
    : `Stopped by ${breach ? describeBreach(breach) : 'a budget'}.`
  const result: SubagentResult = {
    ...raw, stopReason: stop, diagnostic: capDiagnostic(raw.diagnostic ? `${headline} ${raw.diagnostic}` : headline),
  }
  if (breach) result.budget = breach
  return result
}

/**
 * A child elsewhere (ACP, A2A) spends wall time no turn of this process watches. When its budget holds a deadline (its
 * own `maxWallMs`, or one up its chain), a timer stops it then with that breach, following a deadline moved later (time
 * parked, an extension). The deadline is on the budget's clock, `performance.now()`: a step of the wall clock moves it
 * neither way. Gives the timer's clear; undefined when there is nothing to watch.
 */
export function watchWall(budget: Budget | undefined, stop: (error: SubagentError) => void): (() => void) | undefined {
  if (!budget || budget.spentInProcess || !Number.isFinite(budget.deadline)) return undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  const arm = () => {
    timer = setTimeout(() => {
      const breach = budget.overtime()
      if (!breach) return arm()
      stop(new SubagentError('BUDGET_EXCEEDED', `Stopped: the delegation tree spent ${describeBreach(breach)}.`, { breach }))
    }, Math.min(Math.max(1, budget.deadline - performance.now()), MAX_TIMER_MS))
    timer.unref?.()
  }
  arm()
  return () => clearTimeout(timer)
}

/**
 * The reason to stop a child elsewhere whose reported spend took the tree past a limit (at most the
 * call it had in flight is spent beyond it), or undefined. An in-process child checks its own
 * budget before each step, so only reported spend is judged.
 */
export function overspent(budget: Budget): SubagentError | undefined {
  if (budget.spentInProcess) return undefined
  const breach = budget.exceeded()
  if (!breach) return undefined
  return new SubagentError('BUDGET_EXCEEDED', `Stopped: the delegation tree spent ${describeBreach(breach)}.`, { breach })
}

/** A `usage` update that reports neither tokens nor work (dropped: there is nothing in it). */
export function isEmptyUsage(update: SubagentUpdate): boolean {
  return !checkedUsage(update.usage) && !isObject(update.work)
}

function safeJson(value: unknown): string {
  try {
    return capDiagnostic(JSON.stringify(value) ?? String(value), 200)
  } catch {
    return 'an unprintable value'
  }
}

export function reasonText(reason: unknown): string | undefined {
  if (reason === undefined) return undefined
  if (typeof reason === 'string') return reason
  return describeError(reason)
}

export const STOP_REASONS: readonly SubagentStopReason[] = [
  'completed', 'aborted', 'error', 'max-tokens', 'refusal', 'max-steps', 'timeout', 'budget', 'pending', 'interrupted', 'closed', 'invalid_output',
]
export const ANY_STOP: ReadonlySet<string> = new Set<string>(STOP_REASONS)
/** Stop reasons that leave the run parked rather than ended: it keeps its child, slots and transcript. */
export const IDLE_STOPS: ReadonlySet<string> = new Set<SubagentStopReason>(['pending', 'interrupted'])

export function isIdleStop(stopReason: SubagentStopReason): stopReason is 'pending' | 'interrupted' {
  return IDLE_STOPS.has(stopReason)
}

/** The closed status vocabulary of the teams design, in the order the README's table lists it. */
export const STATUSES: readonly SubagentStatus[] = Object.freeze(['done', 'pending', 'incomplete', 'interrupted', 'closed', 'timeout', 'error'])

/** The stop reason, output, diagnostic and question of an odd provider result (malformed, pending, with a diagnostic), made well-formed. */
export function checkedResult(providerName: string, raw: unknown): SubagentResult {
  if (!isObject(raw)) {
    return {
      stopReason: 'error',
      output: '',
      diagnostic: `Subagent provider "${providerName}" settled the run with ${raw === null ? 'null' : typeof raw}, not a result object.`,
    }
  }
  const problems: string[] = []
  let stopReason = raw.stopReason as SubagentStopReason
  if (typeof stopReason !== 'string' || !ANY_STOP.has(stopReason)) {
    problems.push(`unknown stop reason ${safeJson(raw.stopReason)}`)
    stopReason = 'error'
  }
  let output = raw.output
  if (typeof output !== 'string') {
    problems.push(`output is ${output === null ? 'null' : typeof output}, not a string`)
    output = ''
    stopReason = 'error'
  }
  let question: PendingQuestion | undefined
  if (stopReason === 'pending') {
    const checked = checkedQuestion(raw.question)
    if (typeof checked === 'string') {
      problems.push(`a pending result needs a question: ${checked}`)
      stopReason = 'error'
    } else {
      question = checked
    }
  }
  let diagnostic = raw.diagnostic === undefined || raw.diagnostic === null ? undefined : reasonText(raw.diagnostic)
  if (problems.length) {
    const headline = `Subagent provider "${providerName}" returned a malformed result: ${problems.join('; ')}.`
    diagnostic = diagnostic ? `${headline} Provider diagnostic: ${diagnostic}` : headline
  }
  const result: SubagentResult = { stopReason, output: output as string }
  if (diagnostic) result.diagnostic = capDiagnostic(diagnostic)
  if (question) result.question = question
  return result
}

/** Charges the growth of a child's reported running totals (tokens, steps, tool calls, delegations) to its budget. */
export function chargeReported(budget: Budget, usage: unknown, work: unknown): void {
  const checked = checkedUsage(usage)
  if (checked) budget.chargeTokensUpTo(totalTokens(checked))
  if (!isObject(work)) return
  const counts = checkedWork(work)
  budget.chargeUpTo('steps', counts.steps)
  budget.chargeUpTo('toolCalls', counts.toolCalls)
  budget.chargeUpTo('children', counts.delegations)
}
