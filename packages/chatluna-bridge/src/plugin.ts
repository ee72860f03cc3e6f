import type { Context } from 'cordis'
import type {} from '@cordis-subagents/agent'
import type {} from '@cordis-subagents/tools'
import { chatlunaOf } from './chatluna.js'
import type { Config } from './config.js'
import { ChatLunaModel } from './model.js'
import { ChatLunaTools } from './tools.js'

export const name = 'chatluna-subagents'
/** `chatluna` is ChatLuna's service (koishi-plugin-chatluna); the bridge reloads with it. */
export const inject = ['agents', 'tools', 'chatluna']

export function apply(ctx: Context, config: Config) {
  const chatluna = chatlunaOf(ctx)
  ctx.agents.registerModel(config.modelName, new ChatLunaModel(() => chatluna, config.modelName, config.defaultModel))
  if (!config.tools.length) return
  new ChatLunaTools(ctx, chatluna, config.tools, { model: config.model, maxDepth: config.maxDepth, budget: config.budget }).start()
}
