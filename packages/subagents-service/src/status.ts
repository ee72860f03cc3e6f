// The closed status vocabulary of the teams design, beside the finer `stopReason` every result keeps.
import type { BudgetName } from '@cordis-subagents/shared'
import type { SubagentStopReason } from './types.js'

/** How a delegation ended, in the teams design's closed vocabulary. */
export type SubagentStatus = 'done' | 'pending' | 'incomplete' | 'interrupted' | 'closed' | 'timeout' | 'error'

/** The limit an `incomplete` run hit: a tree budget by name, the per-turn step limit, or the model's output cap. */
export type IncompleteLimit = BudgetName | 'maxSteps' | 'maxTokens'

export interface SubagentStatusOf {
  status: SubagentStatus
  /** With `incomplete`: which limit stopped it. */
  limit?: IncompleteLimit
}

/** Every status, in the order the README's table lists them. */
export const STATUSES: readonly SubagentStatus[] = Object.freeze(['done', 'pending', 'incomplete', 'interrupted', 'closed', 'timeout', 'error'])

/**
 * The status of a result from its stop reason (and, for a budget, the breach that names the limit):
 * `completed` → done; `pending` → pending; `max-steps` / `max-tokens` / `budget` → incomplete, with the
 * limit; `interrupted` → interrupted; `closed` and `aborted` (its holder ended it) → closed; `timeout` →
 * timeout; `error`, `refusal` and anything else → error.
 */
export function statusOf(result: { stopReason: SubagentStopReason | string; budget?: { budget: BudgetName } }): SubagentStatusOf {
  switch (result.stopReason) {
    case 'completed': return { status: 'done' }
    case 'pending': return { status: 'pending' }
    case 'max-steps': return { status: 'incomplete', limit: 'maxSteps' }
    case 'max-tokens': return { status: 'incomplete', limit: 'maxTokens' }
    case 'budget': return result.budget ? { status: 'incomplete', limit: result.budget.budget } : { status: 'incomplete' }
    case 'interrupted': return { status: 'interrupted' }
    case 'closed':
    case 'aborted': return { status: 'closed' }
    case 'timeout': return { status: 'timeout' }
    default: return { status: 'error' }
  }
}
