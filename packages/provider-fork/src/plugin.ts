import type { Context } from 'cordis'
import { injected } from '@cordis-subagents/shared'
import { createInProcessProvider, type InProcessConfig, inProcessConfig } from '@cordis-subagents/provider-spawn'

/**
 * `fork`: a child agent in this process that starts with the parent's completed turns
 * (never the turn in flight), so the prompt only needs what is new.
 */
export const name = 'provider-fork'
// The same in-process provider as spawn: the same services, and reusable under other names.
export { inject, reusable } from '@cordis-subagents/provider-spawn'

export type Config = InProcessConfig
export const Config = inProcessConfig('fork')

export function apply(ctx: Context, config: Config) {
  injected(ctx, 'subagents').register(createInProcessProvider(ctx, { ...config, inheritsParentContext: true }))
}
