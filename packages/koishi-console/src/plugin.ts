import { fileURLToPath } from 'node:url'
import type { Context } from 'koishi'
import type {} from '@koishijs/plugin-console'
import type { Context as CordisContext } from 'cordis'
import { ConsoleData } from './data.js'
import type {} from '@cordis-subagents/agent'
import type {} from '@cordis-subagents/subagents-service'
import { Config } from './config.js'
import { addListeners } from './listeners.js'
import { DelegationView, type NodeMap, type TreeMap } from './view.js'

export const name = 'subagents-console'
export const inject = { required: ['console', 'agents', 'subagents'] }
export { Config }

/**
 * A page of Koishi's console ("Delegations" in its sidebar) with every live and recent
 * delegation tree of this process: the standalone console's tree, transcripts, cancel and answer,
 * over the console's own WebSocket, behind its users (`viewAuthority`, `actAuthority`).
 */
export function apply(ctx: Context, config: Config): void {
  const view = new DelegationView(ctx, config)
  const host = ctx as unknown as CordisContext
  const authority = config.viewAuthority
  host.plugin(ConsoleData<NodeMap>, { key: 'subagentNodes', authority, read: () => view.nodes() })
  host.plugin(ConsoleData<TreeMap>, { key: 'subagentTrees', authority, read: () => view.trees() })
  addListeners(ctx, view, config)
  ctx.console.addEntry({
    dev: fileURLToPath(new URL('../client/index.ts', import.meta.url)),
    prod: fileURLToPath(new URL('../dist', import.meta.url)),
  })
}
