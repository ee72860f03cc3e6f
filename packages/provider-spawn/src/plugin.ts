import type { Context } from 'cordis'
import { injected } from '@cordis-subagents/shared'
import { type InProcessConfig, inProcessConfig } from './config.js'
import { createInProcessProvider } from './in-process-provider.js'

/** `spawn`: a fresh child agent in this process. It does not see the parent's conversation. */
export const name = 'provider-spawn'
export const reusable = true
export const inject = ['subagents', 'agents']

export type Config = InProcessConfig
export const Config = inProcessConfig('spawn')

export function apply(ctx: Context, config: Config) {
  injected(ctx, 'subagents').register(createInProcessProvider(ctx, { ...config, inheritsParentContext: false }))
}
