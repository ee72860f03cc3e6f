/**
 * Hooks for tests (`@cordis-subagents/serve-acp/testing`): the session store behind `session/load`,
 * driven without a client. Not part of the plugin's API; they may change in any release.
 */
/** @internal */
export { DEFAULT_STORE_LIMITS, isSessionId, newSessionId, SessionStore, type SessionStoreLimits, type StoredSession } from './session-store.js'
