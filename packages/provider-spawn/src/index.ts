import { Context } from 'cordis'
import { type InProcessConfig, inProcessConfig } from './config.js'
import { createInProcessProvider } from './in-process-provider.js'

export { createInProcessProvider, SUBAGENT_NOTE, type InProcessProviderOptions } from './in-process-provider.js'
export { MAX_IN_PROCESS_FOLLOW_UPS } from './steering.js'
export { inProcessConfig, type InProcessConfig } from './config.js'

/** `spawn`: a fresh child agent in this process. It does not see the parent's conversation. */
export const name = 'provider-spawn'
export const reusable = true
export const inject = ['subagents', 'agents']

export type Config = InProcessConfig
export const Config = inProcessConfig('spawn')

export function apply(ctx: Context, config: Config) {
  ctx.subagents.register(createInProcessProvider(ctx, { ...config, inheritsParentContext: false }))
}
