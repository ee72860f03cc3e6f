import type { Budget } from '@cordis-subagents/agent'
import { type BudgetBreach, type BudgetName, checkedQuestion, checkedUsage, checkedWork, describeBreach, isCount, totalTokens, type Usage } from '@cordis-subagents/shared'
import { capDiagnostic } from '../diagnostic.js'
import { describeError } from '@cordis-subagents/shared'
import type { PendingQuestion } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type {
  IncompleteLimit, ProviderStartRequest, SubagentOutcome, SubagentRequest, SubagentResult, SubagentRun, SubagentRunInfo, SubagentStatus,
  SubagentStatusOf, SubagentStopReason, SubagentUpdate,
} from '../types.js'
import { isObject } from '../admission/checks.js'

// The run's boundary with its provider: what goes to it (the request, its start as a promise, the
// run's info at the hand-over: its id is minted by admission, admission/admission.ts) and what comes
// back (the result a provider settles a run with, made well-formed: stop reason, output, usage, work,
// limits; the spend a child elsewhere, ACP or A2A, reports of its tree, charged to the parent's tree).

export const STOP_REASONS: readonly SubagentStopReason[] = [
  'completed', 'aborted', 'error', 'max-tokens', 'refusal', 'max-steps', 'timeout', 'budget', 'pending', 'interrupted', 'closed', 'invalid_output',
]

/** Stop reasons that leave the run parked rather than ended: it keeps its child, slots and transcript. */
export function isIdleStop(stopReason: SubagentStopReason): stopReason is 'pending' | 'interrupted' {
  return stopReason === 'pending' || stopReason === 'interrupted'
}

const ANY_STOP = new Set<string>(STOP_REASONS)

// The closed status vocabulary of the teams design, beside the finer stop reason every result keeps.
/** Every status, in the order the README's table lists them. */
export const STATUSES: readonly SubagentStatus[] = Object.freeze(['done', 'pending', 'incomplete', 'interrupted', 'closed', 'timeout', 'error'])

/**
 * The status of a result from its stop reason (and, for a budget, the breach that names the limit):
 * `completed` → done; `pending` → pending; `max-steps` / `max-tokens` / `budget` → incomplete, with the
 * limit; `interrupted` → interrupted; `closed` and `aborted` (its holder ended it) → closed; `timeout` →
 * timeout; `error`, `refusal`, `invalid_output` and anything else → error.
 */
export function statusOf(result: { stopReason: SubagentStopReason | string; budget?: { budget: BudgetName } }): SubagentStatusOf {
  switch (result.stopReason) {
    case 'completed': return SHARED.done
    case 'pending': return SHARED.pending
    case 'max-steps': return SHARED.maxSteps
    case 'max-tokens': return SHARED.maxTokens
    case 'budget': return result.budget ? { status: 'incomplete', limit: result.budget.budget } : SHARED.incomplete
    case 'interrupted': return SHARED.interrupted
    case 'closed':
    case 'aborted': return SHARED.closed
    case 'timeout': return SHARED.timeout
    default: return SHARED.error
  }
}

// Frozen and shared: every delegation's outcome reads its status here, building nothing.
const status = (value: SubagentStatus, limit?: IncompleteLimit): SubagentStatusOf =>
  Object.freeze(limit ? { status: value, limit } : { status: value })
const SHARED = {
  done: status('done'), pending: status('pending'), incomplete: status('incomplete'), interrupted: status('interrupted'),
  closed: status('closed'), timeout: status('timeout'), error: status('error'),
  maxSteps: status('incomplete', 'maxSteps'), maxTokens: status('incomplete', 'maxTokens'),
}

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

/** Input + output tokens of a usage from outside, or undefined when it is not well-formed. */
function tokensOf(usage: Usage | undefined): number | undefined {
  const checked = checkedUsage(usage)
  return checked ? totalTokens(checked) : undefined
}

/** Turns whatever the provider's result fulfilled with into a well-formed result. */
export function normalise(providerName: string, raw: unknown): SubagentResult {
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
  const usage = checkedUsage(raw.usage)
  if (usage) result.usage = usage
  result.work = checkedWork(raw.work)
  if (isObject(raw.budget)) result.budget = raw.budget as unknown as BudgetBreach
  if (stopReason === 'max-steps' && isCount(raw.stepLimit)) result.stepLimit = raw.stepLimit
  if (question) result.question = question
  if (stopReason === 'completed' && raw.value !== undefined) result.value = raw.value
  return result
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

/** A settled result as holders get it: `status` (and `limit`), `work` and `durationMs` set, no empty `question`, frozen. */
export function sealed(settled: SubagentResult, startedAt: number): SubagentOutcome {
  const outcome: SubagentOutcome = Object.assign({}, settled) as SubagentOutcome
  if (outcome.question === undefined) delete outcome.question
  const { status, limit } = statusOf(settled)
  outcome.status = status
  if (limit !== undefined) outcome.limit = limit
  outcome.work = settled.work ?? checkedWork(undefined)
  outcome.durationMs = Math.max(0, Date.now() - startedAt)
  return Object.freeze(outcome)
}

/** Charges the growth of a child's reported running totals (tokens, steps, tool calls, delegations) to its budget. */
export function chargeReported(budget: Budget, usage: unknown, work: unknown): void {
  const tokens = tokensOf(usage as SubagentResult['usage'])
  if (tokens !== undefined) budget.chargeTokensUpTo(tokens)
  if (!isObject(work)) return
  const counts = checkedWork(work)
  budget.chargeUpTo('steps', counts.steps)
  budget.chargeUpTo('toolCalls', counts.toolCalls)
  budget.chargeUpTo('children', counts.delegations)
}

/**
 * The reason to stop a child elsewhere whose reported spend took the tree past a limit (at most the
 * call it had in flight is spent beyond it), or undefined. An in-process child checks its own
 * budget before each step, so only reported spend is judged.
 */
function overspent(budget: Budget): SubagentError | undefined {
  if (budget.spentInProcess) return undefined
  const breach = budget.exceeded()
  if (!breach) return undefined
  return new SubagentError('BUDGET_EXCEEDED', `Stopped: the delegation tree spent ${describeBreach(breach)}.`, { breach })
}

/** A `usage` update that reports neither tokens nor work (dropped: there is nothing in it). */
export function isEmptyUsage(update: SubagentUpdate): boolean {
  return tokensOf(update.usage) === undefined && !isObject(update.work)
}

/** Charges a `usage` update's running totals to `budget`; the reason to stop the run when they took the tree past a limit. */
export function chargeUsage(budget: Budget, update: SubagentUpdate): SubagentError | undefined {
  chargeReported(budget, update.usage, update.work)
  return overspent(budget)
}

/**
 * The provider's request: `base` (the service's fields) plus every other field of the caller's
 * request as it is, but its `budget` (limits the service turns into the carved budget). A copy
 * loop rather than `{ ...rest, … }`, which V8 runs on a slow path (≈ 0.5–1 µs per start).
 */
export function passOn(request: SubagentRequest, base: ProviderStartRequest): ProviderStartRequest {
  const to = base as unknown as Record<string, unknown>
  const from = request as unknown as Record<string, unknown>
  for (const key of Object.keys(from)) {
    if (key !== 'budget' && !(key in to)) to[key] = from[key]
  }
  return base
}

/** What `call` returns, as a promise: a throw becomes a rejection. */
export function promiseOf(call: () => unknown): Promise<unknown> {
  try {
    return Promise.resolve(call())
  } catch (error) {
    return Promise.reject(error)
  }
}

type Writable<T> = { -readonly [K in keyof T]: T[K] }

/** A run's info at the hand-over (frozen). */
export function runInfoOf(
  runId: string, provider: string, request: SubagentRequest, run: SubagentRun, depth: number, startedAt: number,
): SubagentRunInfo {
  const childId = typeof run.childId === 'string' ? run.childId : undefined
  const origin = typeof run.origin === 'string' && run.origin ? run.origin.slice(0, 32) : undefined
  // Built by assignment: a literal with a spread in it takes V8's slow path (≈ 0.2–0.7 µs each).
  const fields: Writable<SubagentRunInfo> = { runId, provider, parentId: request.parent.id, depth, startedAt }
  if (request.label !== undefined) fields.label = request.label
  if (childId !== undefined) fields.childId = childId
  if (origin !== undefined) fields.origin = origin
  return Object.freeze(fields)
}

/** Whether what the provider's `start` fulfilled with is a run (a result promise, `cancel`, `dispose`). */
export function isRun(value: unknown): value is SubagentRun {
  if (!isObject(value)) return false
  try {
    return isObject(value.result) && typeof value.result.then === 'function'
      && typeof value.cancel === 'function' && typeof value.dispose === 'function'
  } catch {
    return false
  }
}
