import type { BudgetLimits, BudgetSpend } from '@cordis-subagents/agent'
import type { BudgetBreach, CrossingBudget } from '@cordis-subagents/shared'

const COUNTED = [['steps', 'maxSteps'], ['tokens', 'maxTokens'], ['toolCalls', 'maxToolCalls'], ['children', 'maxChildren']] as const

/**
 * A parent's remaining budget (the crossing's `SUBAGENT_BUDGET`) across the calls of one session. Each
 * call is a root run of its own, but the parent's budget is one budget: each call may spend what the
 * calls before it left, and once a limit is spent no call runs. A server no parent of ours started
 * (no crossing budget) keeps nothing here.
 */
export class ParentBudget {
  private readonly spent: BudgetSpend = { steps: 0, tokens: 0, toolCalls: 0, children: 0 }
  /** When the wall time (maxWallMs) started, on the monotonic clock: a step of the wall clock neither spends nor returns it. */
  private readonly since = performance.now()

  constructor(private readonly parent: CrossingBudget | undefined) {}

  /** The limits the next call's root run gets from the parent: what is left of its budget (undefined: the parent set none). */
  remaining(now = performance.now()): BudgetLimits | undefined {
    const parent = this.parent
    if (!parent) return undefined
    const out: BudgetLimits = {}
    for (const [name, key] of COUNTED) {
      const limit = parent[key]
      if (typeof limit === 'number') out[key] = Math.max(0, limit - this.spent[name])
    }
    if (typeof parent.maxWallMs === 'number') out.maxWallMs = Math.max(1, parent.maxWallMs - (now - this.since))
    return out
  }

  /** The limit of the parent's that leaves no room for another call (a call is one tool call), or undefined. */
  breach(now = performance.now()): BudgetBreach | undefined {
    const parent = this.parent
    if (!parent) return undefined
    for (const [name, key] of COUNTED) {
      const limit = parent[key]
      if (typeof limit !== 'number') continue
      const spent = this.spent[name]
      if (name === 'toolCalls' ? spent >= limit : spent > limit) return { budget: name, limit, spent }
    }
    if (typeof parent.maxWallMs === 'number' && now - this.since >= parent.maxWallMs) return { budget: 'wallMs', limit: parent.maxWallMs, spent: now - this.since }
    return undefined
  }

  /** Adds what a call's root run spent (its whole tree). */
  add(spend: Readonly<BudgetSpend>) {
    for (const [name] of COUNTED) this.spent[name] += spend[name]
  }
}
