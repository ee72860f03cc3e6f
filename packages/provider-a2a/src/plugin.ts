import type { Context } from 'cordis'
import { headChars, injected, peerLine } from '@cordis-subagents/shared'
import type {} from '@cordis-subagents/subagents-service'
import type { Config } from './config.js'
import type { EndpointHealth } from './endpoint.js'
import { createA2aProvider } from './provider.js'

export const name = 'provider-a2a'
export const reusable = true
export const inject = ['subagents']

/**
 * Fetches and checks the agent card, then registers the provider. A card that cannot be fetched or
 * used fails this plugin (logged with the URL and what is wrong); the rest of the app runs on.
 */
export async function apply(ctx: Context, config: Config) {
  const controller = new AbortController()
  ctx.on('dispose', () => controller.abort(new Error('the plugin was disposed while it fetched the agent card')))
  const logger = ctx.logger('a2a')
  const debug = (format: string, ...args: unknown[]) => logger.debug(format, ...args)
  const warn = (format: string, ...args: unknown[]) => logger.warn(format, ...args)
  const onHealth = (health: EndpointHealth) => {
    if (health.healthy) logger.info('%s: the agent host %s is healthy again', config.name, health.url)
    else {
      const retryIn = Math.max(0, (health.retryAt ?? 0) - Date.now())
      logger.warn('%s: the agent host %s is unhealthy (retried after %d ms): %s', config.name, health.url, retryIn, peerLine(health.lastError ?? ''))
    }
  }
  let provider: Awaited<ReturnType<typeof createA2aProvider>>
  try {
    provider = await createA2aProvider({ ...config, signal: controller.signal, debug, warn, onHealth })
  } catch (error) {
    // Disposed while it read the card (an unload, or an edit that applies this entry again): this apply is over, quietly.
    // Failing would fail the scope, which the edit restarted for the new apply.
    if (controller.signal.aborted) return
    throw error
  }
  if (controller.signal.aborted) return void provider.dispose()
  // A reload, a removal or ctx.stop(): no new start; runs still starting (waiting for the remote to name
  // the task) are not the service's yet and are stopped here. Runs handed over are their holders' and go on.
  ctx.on('dispose', () => provider.dispose())
  injected(ctx, 'subagents').register(provider)
  // The card is the remote's word: its name is cleaned before it reaches a terminal.
  const agent = JSON.stringify(headChars(peerLine(provider.card.name), 80))
  logger.debug('%s: the remote agent %s (%s; %d endpoints)', provider.name, agent, provider.cardUrl, provider.endpoints().length)
}
