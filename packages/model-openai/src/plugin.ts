import type { Context } from 'cordis'
import type {} from '@cordis-subagents/agent'
import { type Config, resolveConfig } from './config.js'
import { OpenAIChatModel } from './model.js'

export const name = 'model-openai'
/** Load it once per endpoint (each load registers one model name). */
export const reusable = true
export const inject = ['agents']

export function apply(ctx: Context, config: Config) {
  const { name: modelName, ...options } = resolveConfig(config)
  const logger = ctx.logger('model-openai')
  const model = new OpenAIChatModel({ ...options, logger })
  ctx.agents.registerModel(modelName, model)
  logger.debug('registered model "%s" → %s (default model id "%s")', modelName, model.endpoint, model.model)
}
