/**
 * Hooks for tests (`@cordis-subagents/model-openai/testing`): internals a test drives directly.
 * Not part of the plugin's API; they may change in any release.
 */
/** @internal */
export { ArrayCappingScanner, MAX_JSON_DEPTH } from './capped-json.js'
/** @internal */
export { fromCompletion, RESPONSE_LIMITS } from './mapping.js'
/** @internal */
export { DEFAULT_MODEL } from './model.js'
/** @internal */
export { retryAfterMs } from './retry-after.js'
