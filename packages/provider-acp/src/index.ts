import type { Context } from 'cordis'
import type {} from '@cordis-subagents/subagents-service'
import type { Config } from './config.js'
import { createAcpProvider } from './provider.js'
import { inheritedMcpServers } from './inherited-mcp.js'

export { cgroupBase } from './cgroup.js'
export { MAX_INHERITED_MCP_SERVERS } from './inherited-mcp.js'
export { Config } from './config.js'
export { CORE_ENV, DEFAULT_EXCLUDE, type EnvInherit } from './env.js'
export { AcpError, type AcpErrorCode } from './errors.js'
export { liveProcessGroups } from './groups.js'
export { createAcpProvider, type AcpProvider, type ProviderOptions } from './provider.js'
export { MAX_ALLOWED_TOOLS } from '@cordis-subagents/subagents-service'
export type { AgentPool, SpareStatus } from './pool.js'
export type { ProcessKind } from './agent-slot.js'
export { MAX_MESSAGE_BYTES, PROTOCOL_VERSION } from './sdk.js'
export { MAX_FOLLOW_UP_LENGTH, MAX_FOLLOW_UPS_PER_RUN, MAX_QUEUED_FOLLOW_UPS } from './follow-ups.js'

export const name = 'provider-acp'
export const reusable = true
export const inject = ['subagents']

export function apply(ctx: Context, config: Config) {
  const provider = createAcpProvider({
    ...config,
    baseDir: ctx.baseDir ?? process.cwd(),
    logger: ctx.logger('acp'),
    ...config.inheritMcpServers ? { inheritedMcpServers: inheritedMcpServers(ctx) } : {},
  })
  ctx.subagents.register(provider)
  // Spares, pooled processes and the finished runs' processes still being stopped go with the
  // plugin (reload, ctx.stop()); a live run's process stops when its run ends. cordis does not
  // await a dispose listener: as a scope task, `ctx.lifecycle.flush()` (and a reload) waits for it.
  ctx.on('dispose', () => ctx.scope.ensure(() => provider.stop()))
}
