/**
 * Hooks for tests (`@cordis-subagents/model-openai/testing`): internals a test drives directly.
 * Not part of the plugin's API; they may change in any release.
 */
export { fromCompletion } from './mapping.js'
export { DEFAULT_MODEL } from './model.js'
