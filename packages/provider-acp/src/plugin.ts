import type { Context } from 'cordis'
import { injected } from '@cordis-subagents/shared'
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
  injected(ctx, 'subagents').register(provider)
  // Spares, pooled processes and the finished runs' processes still being stopped go with the
  // plugin (reload, ctx.stop()); a live run's process stops when its run ends. cordis does not
  // await a dispose listener: as a scope task, `ctx.lifecycle.flush()` (and a reload) waits for it.
  ctx.on('dispose', () => ctx.scope.ensure(() => provider.stop()))
}
