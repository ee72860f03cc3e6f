/**
 * Hooks for tests (`@cordis-subagents/telemetry/testing`): the attribute names the spans carry, for
 * a test that checks every one is documented. Not part of the plugin's API; they may change in any release.
 */
/** @internal */
export { ERROR_TYPE, GEN_AI, OURS, SERVER } from './attributes.js'
/** @internal */
export { failureKind } from './export-failures.js'
