import { type Crossing, crossingFromEnv, lowestLimits } from '@cordis-subagents/shared'
import type { BudgetLimits } from './types.js'
import { RootCeiling } from './root-ceiling.js'

/** What a parent host of ours passed this process (the `SUBAGENT_*` variables of the crossing), read once by `ctx.agents`. */
export interface RootCrossing {
  /** Depth, depth ceiling and budget: tree-wide bounds of every root run here. */
  crossing: Crossing
  /** Depth of agents created without a parent: the crossing's, else the config's. */
  rootDepth: number
  /** Limits of root runs: the config's, lowered by the crossing's budget and depth ceiling. */
  rootLimits: BudgetLimits
  /** The crossing's tool ceiling, held until the parent's ACP `initialize` names its nonce. */
  ceiling: RootCeiling
}

/** Reads the crossing from `env` (a malformed variable is dropped and passed to `warn`) and applies it to the config's root settings. */
export function readRootCrossing(
  config: { depth: number; budget?: BudgetLimits },
  warn: (problem: string) => void,
  env: Record<string, string | undefined> = process.env,
): RootCrossing {
  const { crossing, problems, scoped } = crossingFromEnv(env)
  for (const problem of problems) warn(problem)
  const envBudget: BudgetLimits | undefined = crossing.budget || crossing.maxDepth !== undefined
    ? { ...crossing.budget, ...crossing.maxDepth === undefined ? {} : { maxDepth: crossing.maxDepth } }
    : undefined
  return {
    crossing,
    rootDepth: crossing.depth ?? config.depth,
    rootLimits: lowestLimits<BudgetLimits>(config.budget, envBudget),
    ceiling: new RootCeiling(scoped),
  }
}
