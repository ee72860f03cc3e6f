import { Schema } from 'cordis'
import { count } from '@cordis-subagents/shared'
import { SubagentError } from './errors.js'

export interface Config {
  /** How many of one parent's children may be live at once; further starts wait FIFO. */
  maxConcurrentPerParent: number
  /** Deepest child depth, for every provider; a request or a tree budget can only lower it. */
  maxDepth: number
  /** Delegations in one tree (all depths below one root run); 16 by default (see the README for why). */
  maxChildren: number
  /** Delegated runs of one tree working at once; further starts wait FIFO. */
  maxConcurrent: number
}

export const DEFAULTS: Readonly<Config> = Object.freeze({ maxConcurrentPerParent: 8, maxDepth: 3, maxChildren: 16, maxConcurrent: 16 })

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  maxDepth: count().default(DEFAULTS.maxDepth)
    .description('Deepest child depth (root agents are depth 0) for every provider. A tool load or a tree budget can lower it, never raise it. ACP children get it in SUBAGENT_MAX_DEPTH.'),
  maxChildren: count().default(DEFAULTS.maxChildren)
    .description('Delegations in one tree: every child, grandchild, ... started below one root run. Further starts are refused with BUDGET_EXCEEDED.'),
  maxConcurrent: count({ min: 1 }).default(DEFAULTS.maxConcurrent)
    .description('Delegated runs of one tree working at once. Further starts wait FIFO; a parent waiting on its children lends them its slot, so nesting never deadlocks.'),
  maxConcurrentPerParent: count({ min: 1 }).default(DEFAULTS.maxConcurrentPerParent)
    .description('How many children one parent agent may have live at once (started and not yet disposed; a parked child is live). Further starts wait in FIFO order; when parked or interrupted children hold every slot, a start is refused at once (PARKED_LIMIT).'),
}) as Schema<Partial<Config>, Config>

/** The config with defaults filled in; a value out of range throws (the plugin fails at load). */
export function resolveConfig(config: Partial<Config> | undefined): Config {
  const resolved: Config = { ...DEFAULTS, ...definedOnly(config) }
  for (const key of Object.keys(DEFAULTS) as (keyof Config)[]) {
    const value = resolved[key]
    const min = key === 'maxDepth' || key === 'maxChildren' ? 0 : 1
    if (!Number.isSafeInteger(value) || value < min) {
      throw new SubagentError('INVALID_REQUEST', `subagents config ${key} must be an integer >= ${min}, got ${String(value)}.`)
    }
  }
  return resolved
}

function definedOnly<T extends object>(value: T | undefined): Partial<T> {
  const result: Partial<T> = {}
  if (!value) return result
  for (const [key, entry] of Object.entries(value)) {
    if (entry !== undefined) (result as Record<string, unknown>)[key] = entry
  }
  return result
}
