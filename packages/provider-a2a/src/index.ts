// The a2a subagent provider: the plugin, what a provider author builds on, and the documented constants.
export { name, reusable, inject, apply } from './plugin.js'
export { Config } from './config.js'
export { A2aError, type A2aErrorCode } from './errors.js'
export { createA2aProvider, type A2aProvider, type ProviderOptions as A2aProviderOptions } from './provider.js'
export type { EndpointHealth } from './endpoint.js'
export { AGENT_CARD_PATH, SUPPORTED_BINDINGS, SUPPORTED_BINDINGS_V03, type ProtocolFamily } from './card.js'
export type { CrossingMetadata } from './crossing.js'
