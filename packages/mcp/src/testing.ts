/**
 * Hooks for tests (`@cordis-subagents/mcp/testing`): the process groups of the stdio servers still
 * running, for a test that checks none outlives its load. Not part of the plugin's API; it may change
 * in any release.
 */
/** @internal */
export { liveServerGroups } from './live-groups.js'
