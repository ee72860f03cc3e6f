import { CodedError } from './errors.js'
import { MAX_REPORTED_COUNT } from './usage.js'

/**
 * The vocabulary of limits shared by every layer: which budget ran out, and the abort reason that
 * says "a limit, not a person, ended this" so each layer can report `timeout` / `budget` instead
 * of `aborted`.
 */

/** What a budget counts. `depth` and `concurrent` are checked at delegation start only. */
export type BudgetName = 'steps' | 'tokens' | 'toolCalls' | 'wallMs' | 'children' | 'depth'

/** A limit that was reached: which, its value, and what had been spent (or attempted). */
export interface BudgetBreach {
  budget: BudgetName
  limit: number
  spent: number
  /** A report from outside that took the spend past the limit claimed more than MAX_REPORTED_COUNT and was clamped. */
  clamped?: boolean
}

export type LimitCode = 'TIMEOUT' | 'BUDGET_EXCEEDED'

/**
 * An abort reason that names a limit. A run aborted with it ends `timeout` (code `TIMEOUT`) or
 * `budget` (code `BUDGET_EXCEEDED`), never `aborted`.
 */
export class LimitError extends CodedError<LimitCode> {
  override name = 'LimitError'
  constructor(code: LimitCode, message: string, readonly breach?: BudgetBreach) {
    super(code, message)
  }
}

/** The stop a limit abort maps to; undefined for anything else (a person's cancel). Duck-typed across packages. */
export function limitStop(reason: unknown): 'timeout' | 'budget' | undefined {
  const code = (reason as { code?: unknown } | null | undefined)?.code
  if (code === 'TIMEOUT') return 'timeout'
  if (code === 'BUDGET_EXCEEDED') return 'budget'
  return undefined
}

const BUDGET_WORDS: Record<BudgetName, string> = {
  steps: 'model calls',
  tokens: 'tokens',
  toolCalls: 'tool calls',
  wallMs: 'milliseconds of wall time',
  children: 'delegations',
  depth: 'levels of delegation depth',
}

/** "the tokens budget (limit 1000, spent 1000)": one phrasing for every layer's messages. */
export function describeBreach(breach: BudgetBreach): string {
  const clamped = breach.clamped
    ? `, counting a report from a child elsewhere clamped to the per-report maximum of ${MAX_REPORTED_COUNT} ${BUDGET_WORDS[breach.budget]}`
    : ''
  return `the ${breach.budget} budget (${breach.limit} ${BUDGET_WORDS[breach.budget]}; ${breach.spent} spent${clamped})`
}
