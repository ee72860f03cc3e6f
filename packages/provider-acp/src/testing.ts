/**
 * Hooks for tests (`@cordis-subagents/provider-acp/testing`): the run class behind the provider
 * (its `pid`, started without a plugin) and the env policy's building blocks. Not part of the
 * plugin's API; they may change in any release.
 */
/** @internal */
export { childEnv, secretValues } from './env.js'
/** @internal */
export { AcpRun } from './run.js'
/** @internal */
export type { RunSettings } from './settings.js'
