import type { Context } from 'cordis'
import type {} from '@cordis-subagents/subagents-service'
import type { Config } from './config.js'
import { createAcpProvider } from './provider.js'

export { AcpError, type AcpErrorCode } from './errors.js'
export { AcpRun } from './run.js'
export { MAX_MESSAGE_BYTES, PROTOCOL_VERSION } from './sdk.js'
export { liveProcessGroups } from './groups.js'
export { childEnv, CORE_ENV, DEFAULT_EXCLUDE, secretValues, type EnvInherit, type EnvPolicy } from './env.js'
export { cgroupBase } from './cgroup.js'
export { Config } from './config.js'
export { createAcpProvider, MAX_ALLOWED_TOOLS, type ProviderOptions } from './provider.js'

export const name = 'provider-acp'
export const reusable = true
export const inject = ['subagents']

export function apply(ctx: Context, config: Config) {
  const provider = createAcpProvider({
    ...config,
    baseDir: ctx.baseDir ?? process.cwd(),
    logger: ctx.logger('acp'),
  })
  ctx.subagents.register(provider)
}
