import type { Context } from 'cordis'
import type {} from '@cordis-subagents/subagents-service'
import type { Config } from './config.js'
import { createAcpProvider } from './provider.js'
import { inheritedMcpServers } from './inherited-mcp.js'

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
  // Spares and pooled processes go with the plugin (reload, ctx.stop()); a run's process stops when its run ends.
  ctx.on('dispose', () => provider.stop())
}
