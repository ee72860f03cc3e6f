import type { BudgetLimits } from '@cordis-subagents/agent'
import { type BudgetBreach, describeBreach, isCount, type missingCapability } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type { SubagentProvider, SubagentRequest } from '../types.js'

// What admission refuses with, off the plain road: a request's budget checked (a plain delegation has none) and the
// refusals' texts (no provider, a capability it lacks, too deep, the tree's budget spent).

export function invalidRequest(message: string): never { throw new SubagentError('INVALID_REQUEST', message) }

const BUDGET_KEYS = ['maxSteps', 'maxTokens', 'maxToolCalls', 'maxWallMs', 'maxChildren', 'maxConcurrent', 'maxDepth']

export function checkBudget(budget: BudgetLimits) {
  if (typeof budget !== 'object' || budget === null || Array.isArray(budget)) invalidRequest('request.budget must be an object of limits.')
  for (const [key, value] of Object.entries(budget)) {
    if (value === undefined) continue
    if (!BUDGET_KEYS.includes(key)) invalidRequest(`request.budget has an unknown key "${key}"; budgets are ${BUDGET_KEYS.join(', ')}.`)
    if (!isCount(value)) invalidRequest(`request.budget.${key} must be a non-negative integer, got ${String(value)}.`)
    // 0 would make every start wait forever in the gate.
    if (key === 'maxConcurrent' && value < 1) invalidRequest(`request.budget.maxConcurrent must be at least 1, got ${value}.`)
  }
}

export function noProvider(name: string, context: string, providers: ReadonlyMap<string, SubagentProvider>): never {
  throw new SubagentError('NO_PROVIDER', `No subagent provider named ${JSON.stringify(name)}${context}. `
    + `Registered providers: ${[...providers.keys()].join(', ') || '(none)'}.`)
}

export function unsupported(provider: SubagentProvider, missing: NonNullable<ReturnType<typeof missingCapability>>): never {
  const { capability, option } = missing
  throw new SubagentError('UNSUPPORTED_CAPABILITY',
    `Subagent provider "${provider.name}" does not support ${option} (capability "${capability}"); remove ${option} from the request or use a provider that has it.`,
    { capability })
}

export function depthExceeded(request: SubagentRequest, depth: number, ceiling: { max: number; source: string }): never {
  throw new SubagentError('DEPTH_EXCEEDED',
    `A child of "${request.parent.id}" would have depth ${depth}, more than ${ceiling.source} ${ceiling.max}; answer without delegating further.`,
    { attempted: depth, max: ceiling.max })
}

/** `BUDGET_EXCEEDED`: the tree's steps, tokens or time are `spent`, or a `breach` of its delegation count. */
export function budgetExceeded(parentId: string, spent: BudgetBreach | undefined, breach?: BudgetBreach): never {
  if (spent) {
    throw new SubagentError('BUDGET_EXCEEDED',
      `"${parentId}" cannot delegate: ${describeBreach(spent)} is spent. Answer with what you have.`, { breach: spent })
  }
  throw new SubagentError('BUDGET_EXCEEDED',
    `"${parentId}" cannot delegate: ${describeBreach(breach!)} is reached in this delegation tree. Do the rest yourself, or answer with what you have.`,
    { breach })
}
